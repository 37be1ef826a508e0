"""`AnthropicBackend`: `POST {ANTHROPIC_BASE_URL}/v1/messages` with `stream: true`, over one shared
`httpx.Client`; timeouts, retries and the watchdog as the OpenAI-compatible adapter has them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from agent.backends.anthropic.errors import status_error
from agent.backends.anthropic.request import build_body
from agent.backends.anthropic.translate import translate
from agent.backends.base import Backend, Event, setting
from agent.backends.openai.errors import _enforce_deadlines, _map_api_errors
from agent.backends.openai.sse import iter_sse
from agent.backends.reasoning import configured as reasoning_setting
from agent.backends.retry import stream_with_retries
from agent.backends.watchdog import Watchdog, cut_response, each_expecting
from agent.exceptions import BackendError

API_VERSION = "2023-06-01"


class AnthropicBackend(Backend):
    """The Anthropic Messages API. Timeouts: as `OpenAIBackend` (first event, then each gap)."""

    name = "anthropic"
    default_model = "claude-haiku-4-5"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        first_event_timeout: float | None = None,
        event_timeout: float | None = None,
        retries: int | None = None,
        prompt_caching: bool | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        base = str(setting(base_url, "ANTHROPIC_BASE_URL", "https://api.anthropic.com")).rstrip("/")
        self.base_url = base
        self.url = f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"
        self.api_key = str(setting(api_key, "ANTHROPIC_API_KEY") or "")
        self._wire_limits(first_event_timeout, event_timeout, retries, sleep)
        self.prompt_caching = bool(setting(prompt_caching, "AGENT_PROMPT_CACHING", True))
        self.max_tokens = int(getattr(settings, "AGENT_MAX_TOKENS", 4096))
        self._clock = time.monotonic
        self._client = httpx.Client(
            timeout=httpx.Timeout(
                connect=10.0, read=max(self.first_event_timeout, self.event_timeout), write=30.0, pool=10.0
            ),
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
        return build_body(
            system=system,
            messages=messages,
            tools=tools,
            model=model or self.default_model,
            max_tokens=int((inference or {}).get("max_tokens") or self.max_tokens),
            inference=inference,
            reasoning=reasoning_setting(),
            cache=self.prompt_caching,
        )

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
            lambda: self._attempt(body), retries=self.retries, sleep=self._sleep, label="anthropic"
        )

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream", "anthropic-version": API_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        return headers

    def _attempt(self, body: dict[str, Any]) -> Iterator[Event]:
        started = self._clock()
        with _map_api_errors(self.api_key):
            with self._client.stream("POST", self.url, json=body, headers=self._headers()) as response:
                if response.status_code >= 300:
                    response.read()
                    raise status_error(response, self.api_key)
                watchdog = Watchdog(lambda: cut_response(response), clock=self._clock)
                first_left = max(self.first_event_timeout - (self._clock() - started), 0.0)
                watchdog.expect(first_left, limit=self.first_event_timeout)
                try:
                    events = _enforce_deadlines(
                        iter_sse(response.iter_bytes()),
                        started=started,
                        first=self.first_event_timeout,
                        between=self.event_timeout,
                        clock=self._clock,
                    )
                    yield from translate(each_expecting(events, watchdog, self.event_timeout), secret=self.api_key)
                except Exception as exc:
                    if watchdog.fired is None:
                        raise
                    message = f"The model server sent no event for {watchdog.fired:g} seconds."
                    raise BackendError(message, retryable=True) from exc
                finally:
                    watchdog.stop()

    def check(self) -> list[str]:
        problems = []
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            problems.append(f"ANTHROPIC_BASE_URL must be an http:// or https:// URL; got {self.base_url!r}.")
        if not self.api_key and parts.netloc.endswith("anthropic.com"):
            problems.append("ANTHROPIC_API_KEY is not set, and api.anthropic.com needs one.")
        if self.first_event_timeout <= 0 or self.event_timeout <= 0:
            problems.append("AGENT_FIRST_EVENT_TIMEOUT_SECONDS and AGENT_EVENT_TIMEOUT_SECONDS must be positive.")
        return problems
