"""`OpenAIResponsesBackend`: `POST {OPENAI_BASE_URL}/responses` with `stream: true` (`agent.backends.http`)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
from django.conf import settings

from agent.backends.base import Event, setting
from agent.backends.http import HttpBackend
from agent.backends.openai.backend import is_reasoning_model
from agent.backends.openai.errors import status_error
from agent.backends.openai_responses.translate import response_events, translate
from agent.backends.openai_responses.wire import to_function_tools, to_input_items
from agent.backends.reasoning import configured as reasoning_setting
from agent.backends.watchdog import Watchdog
from agent.exceptions import BackendError


class OpenAIResponsesBackend(HttpBackend):
    """OpenAI's Responses API, stateless: `store: false`, the whole history sent on every call, and a
    reasoning model's reasoning items sent back with their `encrypted_content` within the tool loop.
    The settings of the `openai` backend (`OPENAI_BASE_URL`, `OPENAI_API_KEY`); timeouts, retries and
    the watchdog as `HttpBackend` has them."""

    name = "openai-responses"
    default_model = "gpt-6-sol"
    url_setting, key_setting, keyed_host = "OPENAI_BASE_URL", "OPENAI_API_KEY", "api.openai.com"

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
        super().__init__(
            base_url=str(setting(base_url, "OPENAI_BASE_URL")),
            api_key=str(setting(api_key, "OPENAI_API_KEY") or ""),
            first_event_timeout=first_event_timeout,
            event_timeout=event_timeout,
            retries=retries,
            sleep=sleep,
        )
        # AGENT_MODEL_REASONING=1: a reasoning model whatever its name (an Azure deployment `prod-chat`)
        self.model_reasoning = bool(getattr(settings, "AGENT_MODEL_REASONING", False))

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
            "input": to_input_items(messages),
            "max_output_tokens": int(inference.get("max_tokens") or self.max_tokens),
            "stream": True,
            "store": False,  # stateless: nothing kept at OpenAI, the history goes whole each call
        }
        if system:
            body["instructions"] = system
        if tools:
            body["tools"] = to_function_tools(tools)
        if self.model_reasoning or is_reasoning_model(body["model"]):
            # Reasoning items come back encrypted, to be sent back within the tool loop; other
            # models make none, and take neither `include` nor `reasoning`.
            body["include"] = ["reasoning.encrypted_content"]
            if (thinking := reasoning_setting()) is not None:
                body["reasoning"] = {"effort": thinking.effort, "summary": "auto"}
        else:
            for key in ("temperature", "top_p"):  # reasoning models refuse sampling settings
                if inference.get(key) is not None:
                    body[key] = inference[key]
        return body

    def url(self) -> str:
        return f"{self.base_url}/responses"

    def headers(self, body: dict[str, Any]) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def status_error(self, response: httpx.Response) -> BackendError:
        return status_error(response, self.api_key)

    def events(self, response: httpx.Response, started: float, watchdog: Watchdog) -> Iterator[Event]:
        """The answer's events: SSE as it streams, or a whole JSON body (a response or an error)."""
        chunks = response.iter_bytes()
        head = b""
        for head in chunks:
            if head.strip():
                break
        if head.lstrip()[:1] in (b"{", b"["):
            yield from response_events(head + b"".join(chunks), secret=self.api_key)
            return
        events = self.deadlined(itertools.chain([head], chunks), started, watchdog)
        yield from translate(events, secret=self.api_key)
