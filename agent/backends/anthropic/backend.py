"""`AnthropicBackend`: `POST {ANTHROPIC_BASE_URL}/v1/messages` with `stream: true` (`agent.backends.http`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Unpack

import httpx

from agent.backends.anthropic.errors import status_error
from agent.backends.anthropic.request import BLOCK_BINDING_BETA, build_body
from agent.backends.anthropic.translate import translate
from agent.backends.base import Event, setting
from agent.backends.http import HttpBackend, HttpOptions
from agent.backends.reasoning import configured as reasoning_setting
from agent.backends.watchdog import Watchdog
from agent.exceptions import BackendError
from agent.values import NeutralMessage, ToolSpec

API_VERSION = "2023-06-01"


class AnthropicBackend(HttpBackend):
    """The Anthropic Messages API; timeouts, retries and the watchdog as `HttpBackend` has them."""

    name = "anthropic"
    default_model = "claude-haiku-4-5"
    url_setting, key_setting, keyed_host = "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "api.anthropic.com"

    default_base_url = "https://api.anthropic.com"

    def __init__(self, *, prompt_caching: bool | None = None, **options: Unpack[HttpOptions]) -> None:
        """`HttpBackend`'s options, and whether to mark the prompt's stable prefix for caching."""
        super().__init__(**options)
        self.prompt_caching = bool(setting(prompt_caching, "AGENT_PROMPT_CACHING", True))

    def request_body(
        self,
        *,
        system: str,
        messages: Sequence[NeutralMessage],
        tools: Sequence[ToolSpec],
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

    def url(self) -> str:
        # A base URL that already ends with the version (a proxy's `https://…/v1`) gets no second one.
        return f"{self.base_url}/messages" if self.base_url.endswith("/v1") else f"{self.base_url}/v1/messages"

    def headers(self, body: dict[str, Any]) -> dict[str, str]:
        headers = {"Accept": "text/event-stream", "anthropic-version": API_VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        if "block_binding" in body.get("thinking", {}):
            headers["anthropic-beta"] = BLOCK_BINDING_BETA
        return headers

    def status_error(self, response: httpx.Response) -> BackendError:
        return status_error(response, self.api_key)

    def events(self, response: httpx.Response, started: float, watchdog: Watchdog) -> Iterator[Event]:
        yield from translate(self.deadlined(response.iter_bytes(), started, watchdog), secret=self.api_key)
