"""`OpenAIResponsesBackend`: `POST {OPENAI_BASE_URL}/responses` with `stream: true` (`agent.backends.http`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from agent.backends.base import Event
from agent.backends.openai.backend import OpenAIBackend, is_reasoning_model, labels_phases
from agent.backends.openai_responses.translate import response_events, translate
from agent.backends.openai_responses.wire import to_function_tools, to_input_items
from agent.backends.reasoning import configured as reasoning_setting
from agent.backends.sse import SSEEvent
from agent.values import NeutralMessage, ToolSpec


class OpenAIResponsesBackend(OpenAIBackend):
    """OpenAI's Responses API, stateless: `store: false`, the whole history sent on every call, and a
    reasoning model's reasoning items sent back with their `encrypted_content` within the tool loop.
    What the `openai` backend has besides the request and the answer's events: its settings
    (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `AGENT_MODEL_REASONING`), headers and error reading."""

    name = "openai-responses"
    default_model = "gpt-6-sol"

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
        model = model or self.default_model
        body: dict[str, Any] = {
            "model": model,
            "input": to_input_items(messages, phases=labels_phases(model)),
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

    def cautions(self, model: str) -> list[str]:
        return []  # (every model takes its tools here)

    def whole_answer(self, body: bytes) -> Iterator[Event]:
        """A whole JSON body where a stream was expected: a response object, or an error."""
        return response_events(body, secret=self.api_key)

    def streamed_answer(self, events: Iterator[SSEEvent]) -> Iterator[Event]:
        return translate(events, secret=self.api_key)
