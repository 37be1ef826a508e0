"""`OpenAIBackend`: `POST {OPENAI_BASE_URL}/chat/completions` with `stream: true` (`agent.backends.http`)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence
from typing import Any, Unpack
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from agent.backends.base import Event, setting
from agent.backends.http import HttpBackend, HttpOptions
from agent.backends.openai.errors import prompt_filtered, status_error
from agent.backends.openai.translate import completion_events, translate
from agent.backends.openai.wire import to_wire_messages, to_wire_tools
from agent.backends.reasoning import Reasoning
from agent.backends.reasoning import configured as reasoning_setting
from agent.backends.sse import SSEEvent
from agent.backends.watchdog import Watchdog
from agent.exceptions import BackendError
from agent.values import NeutralMessage, ToolSpec

REASONING_MODEL_PREFIXES = ("o1", "o3", "o4", "gpt-5", "gpt-6")
# GPT-5.4 and later reason by default and take function tools in Chat Completions only with
# `reasoning_effort: "none"` (left out, they answer 400 too) ...
_TOOLS_AT_NO_EFFORT = re.compile(r"gpt-(5\.([4-9]|[1-9]\d)|6)\b")
# ... and GPT-6 Astra, 6.1 and 6.2 take them only through the Responses API, not Chat Completions.
_TOOLS_ONLY_IN_RESPONSES = re.compile(r"gpt-6(-astra|\.[1-9])")
# GPT-5.3 Codex and later label each assistant message `commentary` (a preamble before tool calls)
# or `final_answer` in the Responses API, and want the label back on every one of the history.
_PHASED = re.compile(r"gpt-(5\.([3-9]|[1-9]\d)|[6-9])(\b|\.)")


def _name(model: str) -> str:
    return model.rsplit("/", 1)[-1]  # ("openai/gpt-6-sol" through a router)


def is_reasoning_model(model: str) -> bool:
    """Whether OpenAI's `model` is one of its reasoning models, by name (o1, o3, o4, GPT-5, GPT-6)."""
    return _name(model).startswith(REASONING_MODEL_PREFIXES)


def labels_phases(model: str) -> bool:
    """Whether OpenAI's `model` labels its messages with a `phase` (GPT-5.3 and later, GPT-6)."""
    return bool(_PHASED.match(_name(model)))


class OpenAIBackend(HttpBackend):
    """The Chat Completions API of OpenAI and of the servers compatible with it; timeouts, retries
    and the watchdog as `HttpBackend` has them."""

    name = "openai"
    default_model = "gpt-4o-mini"
    url_setting, key_setting, keyed_host = "OPENAI_BASE_URL", "OPENAI_API_KEY", "api.openai.com"
    keyed_hosts = (
        "openrouter.ai",
        "generativelanguage.googleapis.com",
        "openai.azure.com",
        "api.deepseek.com",
        "api.groq.com",
        "api.x.ai",
        "api.perplexity.ai",
        "api.mistral.ai",
        "api.together.xyz",
        "api.fireworks.ai",
    )

    default_base_url = "https://api.openai.com/v1"

    def __init__(self, **options: Unpack[HttpOptions]) -> None:
        """`HttpBackend`'s options; and from the settings, how PDFs are sent and whether the model reasons."""
        super().__init__(**options)
        # PDFs as `file` parts (OpenAI's own API takes them); elsewhere their text, extracted.
        pdf = str(setting(None, "OPENAI_PDF_FILES", "auto") or "auto").lower()
        self.pdf_files = (
            urlsplit(self.base_url).netloc.lower() == "api.openai.com" if pdf == "auto" else pdf in ("1", "true", "yes")
        )
        # AGENT_MODEL_REASONING=1: a reasoning model whatever its name (an Azure deployment `prod-chat`)
        self.model_reasoning = bool(getattr(settings, "AGENT_MODEL_REASONING", False))

    def request_body(
        self,
        *,
        system: str,
        messages: Sequence[NeutralMessage],
        tools: Sequence[ToolSpec],
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
        reasoning = self.model_reasoning or is_reasoning_model(body["model"])
        limit_key = "max_completion_tokens" if reasoning else "max_tokens"
        body[limit_key] = int(inference.get("max_tokens") or self.max_tokens)
        if tools:
            body["tools"] = to_wire_tools(tools)
        # Reasoning models take no sampling settings (OpenAI answers 400 for a temperature).
        for key in ("stop",) if reasoning else ("temperature", "top_p", "stop"):
            if inference.get(key) is not None:
                body[key] = inference[key]
        if tools and _TOOLS_AT_NO_EFFORT.match(_name(body["model"])):
            body["reasoning_effort"] = "none"  # the assistant's tools before its thinking (AGENT_REASONING)
        elif (thinking := reasoning_setting()) is not None:
            self._ask_to_think(body, thinking, reasoning_model=reasoning)
        return body

    def cautions(self, model: str) -> list[str]:
        if _TOOLS_ONLY_IN_RESPONSES.match(_name(model)):
            return [
                f"OpenAI's {model} takes function tools only through the Responses API, and this backend "
                "speaks Chat Completions: every turn that offers the assistant's tools will fail. "
                "Use AGENT_BACKEND=openai-responses, or gpt-6-sol, gpt-6-luna or gpt-5.2 here."
            ]
        if _TOOLS_AT_NO_EFFORT.match(_name(model)) and reasoning_setting() is not None:
            return [
                f"OpenAI's {model} takes function tools in Chat Completions only without reasoning, so "
                "AGENT_REASONING applies only to calls that offer the assistant no tools. "
                "Use AGENT_BACKEND=openai-responses for a model that reasons with its tools."
            ]
        return []

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

    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self, body: dict[str, Any]) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def status_error(self, response: httpx.Response) -> BackendError:
        return status_error(response, self.api_key)

    def withheld(self, response: httpx.Response) -> bool:
        return prompt_filtered(response)

    def events(self, response: httpx.Response, started: float, watchdog: Watchdog) -> Iterator[Event]:
        """The answer's events: SSE as it streams, or a whole JSON body (an answer or an error)."""
        chunks = response.iter_bytes()
        head = b""
        for head in chunks:
            if head.strip():
                break
        if head.lstrip()[:1] in (b"{", b"["):
            yield from self.whole_answer(head + b"".join(chunks))
            return
        yield from self.streamed_answer(self.deadlined(itertools.chain([head], chunks), started, watchdog))

    def whole_answer(self, body: bytes) -> Iterator[Event]:
        """A whole JSON body where a stream was expected: a completion, or an error."""
        return completion_events(body, secret=self.api_key)

    def streamed_answer(self, events: Iterator[SSEEvent]) -> Iterator[Event]:
        return translate(events, secret=self.api_key)
