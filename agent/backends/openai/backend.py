"""`OpenAIBackend`: HTTP with one shared `httpx.Client`, timeouts, error mapping and retries."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from agent.backends.base import Backend, Event, setting
from agent.backends.openai.errors import _enforce_deadlines, _map_api_errors, status_error
from agent.backends.openai.sse import iter_sse
from agent.backends.openai.translate import completion_events, translate
from agent.backends.openai.wire import to_wire_messages, to_wire_tools
from agent.backends.reasoning import Reasoning
from agent.backends.reasoning import configured as reasoning_setting
from agent.backends.retry import stream_with_retries
from agent.backends.watchdog import Watchdog, cut_response, each_expecting
from agent.exceptions import BackendError

REASONING_MODEL_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def _reasoning_model(model: str) -> bool:
    name = model.rsplit("/", 1)[-1]
    return name.startswith(REASONING_MODEL_PREFIXES)


class OpenAIBackend(Backend):
    """`POST {base_url}/chat/completions` with `stream: true`, one shared connection pool per instance.

    Timeouts: connecting may take 10 s. `first_event_timeout` bounds the wait from sending the request
    to the first SSE data event; `event_timeout` bounds each later gap between data events. httpx only
    has one read timeout per request, so the socket read timeout is `max(first, event)` (it bounds
    the wait for the response headers), and once the headers are in a `Watchdog` holds each event to
    its own deadline, cutting the connection under a read that waits longer: a server that goes
    silent after its first event is cut after `event_timeout`, not the longer of the two. The
    deadlines are also checked on every line received, so `:` keep-alive comments hide nothing.
    """

    name = "openai"
    default_model = "gpt-4o-mini"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        first_event_timeout: float | None = None,
        event_timeout: float | None = None,
        retries: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = str(setting(base_url, "OPENAI_BASE_URL")).rstrip("/")
        self.api_key = str(setting(api_key, "OPENAI_API_KEY") or "")
        # PDFs as `file` parts (OpenAI's own API takes them); elsewhere their text, extracted.
        pdf = str(setting(None, "OPENAI_PDF_FILES", "auto") or "auto").lower()
        self.pdf_files = (
            urlsplit(self.base_url).netloc.lower() == "api.openai.com" if pdf == "auto" else pdf in ("1", "true", "yes")
        )
        self._wire_limits(first_event_timeout, event_timeout, retries, sleep)
        self.max_tokens = int(getattr(settings, "AGENT_MAX_TOKENS", 4096))
        # AGENT_MODEL_REASONING=1: a reasoning model whatever its name (an Azure deployment `prod-chat`)
        self.model_reasoning = bool(getattr(settings, "AGENT_MODEL_REASONING", False))
        self._clock = time.monotonic
        read = max(self.first_event_timeout, self.event_timeout)
        self._client = httpx.Client(
            timeout=httpx.Timeout(connect=10.0, read=read, write=30.0, pool=10.0),
            limits=httpx.Limits(max_connections=2000, max_keepalive_connections=200),
        )

    def close(self) -> None:
        self._client.close()

    def request_body(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str,
        inference: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        inference = inference or {}
        body: dict[str, Any] = {
            "model": model or self.default_model,
            "messages": to_wire_messages(system, messages, pdf_files=self.pdf_files),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # OpenAI's reasoning models (o1, o3, o4-mini, gpt-5 …) refuse `max_tokens`; the
        # compatible servers mostly know only `max_tokens`.
        reasoning = self.model_reasoning or _reasoning_model(body["model"])
        limit_key = "max_completion_tokens" if reasoning else "max_tokens"
        body[limit_key] = int(inference.get("max_tokens") or self.max_tokens)
        if tools:
            body["tools"] = to_wire_tools(tools)
        # Reasoning models take no sampling settings (OpenAI answers 400 for a temperature).
        for key in ("stop",) if reasoning else ("temperature", "top_p", "stop"):
            if inference.get(key) is not None:
                body[key] = inference[key]
        if (thinking := reasoning_setting()) is not None:
            self._ask_to_think(body, thinking, reasoning_model=reasoning)
        return body

    def _ask_to_think(self, body: dict[str, Any], thinking: Reasoning, *, reasoning_model: bool) -> None:
        """`AGENT_REASONING` in each server's words: OpenRouter's `reasoning` (an effort or a token
        budget), DeepSeek's `thinking` switch, and `reasoning_effort` for reasoning models (OpenAI,
        Azure, Gemini's compatible endpoint). Other models are sent nothing: they would refuse it."""
        host = urlsplit(self.base_url).netloc.lower()
        if host.endswith("openrouter.ai"):
            body["reasoning"] = {"max_tokens": thinking.budget} if thinking.budget else {"effort": thinking.effort}
        elif host.endswith("deepseek.com"):
            body["thinking"] = {"type": "enabled"}
        elif reasoning_model:
            body["reasoning_effort"] = thinking.effort

    def stream(
        self,
        *,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str,
        inference: dict[str, Any] | None = None,
    ) -> Iterator[Event]:
        body = self.request_body(system=system, messages=messages, tools=tools, model=model, inference=inference)
        yield from stream_with_retries(
            lambda: self._attempt(body), retries=self.retries, sleep=self._sleep, label="openai"
        )

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def _attempt(self, body: dict[str, Any]) -> Iterator[Event]:
        started = self._clock()
        with _map_api_errors(self.api_key):
            url = f"{self.base_url}/chat/completions"
            with self._client.stream("POST", url, json=body, headers=self._headers()) as response:
                if response.status_code >= 300:
                    response.read()
                    raise status_error(response, self.api_key)
                watchdog = Watchdog(lambda: cut_response(response), clock=self._clock)
                first_left = max(self.first_event_timeout - (self._clock() - started), 0.0)
                watchdog.expect(first_left, limit=self.first_event_timeout)
                try:
                    yield from self._events(response, started, watchdog)
                except Exception as exc:
                    if watchdog.fired is None:
                        raise
                    message = f"The model server sent no event for {watchdog.fired:g} seconds."
                    raise BackendError(message, retryable=True) from exc
                finally:
                    watchdog.stop()

    def _events(self, response: httpx.Response, started: float, watchdog: Watchdog) -> Iterator[Event]:
        """The answer's events: SSE as it streams, or a whole JSON body (a completion or an error)."""
        chunks = response.iter_bytes()
        head = b""
        for head in chunks:
            if head.strip():
                break
        if head.lstrip()[:1] in (b"{", b"["):
            yield from completion_events(head + b"".join(chunks), secret=self.api_key)
            return
        events = _enforce_deadlines(
            iter_sse(itertools.chain([head], chunks)),
            started=started,
            first=self.first_event_timeout,
            between=self.event_timeout,
            clock=self._clock,
        )
        yield from translate(each_expecting(events, watchdog, self.event_timeout), secret=self.api_key)

    def check(self) -> list[str]:
        problems = []
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            problems.append(f"OPENAI_BASE_URL must be an http:// or https:// URL; got {self.base_url!r}.")
        if not self.api_key and parts.netloc.endswith("api.openai.com"):
            problems.append("OPENAI_API_KEY is not set, and api.openai.com needs one.")
        if self.first_event_timeout <= 0 or self.event_timeout <= 0:
            problems.append("AGENT_FIRST_EVENT_TIMEOUT_SECONDS and AGENT_EVENT_TIMEOUT_SECONDS must be positive.")
        if self.retries < 0:
            problems.append("AGENT_RETRIES must be zero or more.")
        return problems
