"""SSE events -> the four neutral event kinds (docs/engine.md, "Backends"), pure.

`translate(sse_events)` is a state machine absorbing the quirks of real servers (Ollama, vLLM, Groq,
OpenRouter, DeepSeek, Perplexity, xAI, Azure); `parse_stream(chunks)` chains it to `iter_sse`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agent import logcontext
from agent.backends.base import Event, parse_tool_input, zero_usage
from agent.backends.http import MAX_MESSAGE_CHARS, scrub
from agent.backends.openai.errors import as_int, count, payload_error
from agent.backends.sse import SSEEvent, iter_sse
from agent.exceptions import BackendError
from agent.values import ToolUseEvent, Usage

logger = logcontext.get_logger("agent.backends")

STOP_REASON_MAP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filtered",
    # words some compatible servers use for the same finishes
    "eos": "end_turn",
    "end_turn": "end_turn",
    "stop_sequence": "stop_sequence",
    "max_tokens": "max_tokens",
    "model_length": "max_tokens",
    "safety": "content_filtered",
    "recitation": "content_filtered",
    "prohibited_content": "content_filtered",
    "refusal": "refusal",
}
# A finish that says the answer failed: an error (retried when nothing was streamed yet).
ERROR_FINISHES = frozenset({"error"})
# Any other word (DeepSeek's `insufficient_system_resource`, vLLM's `abort`, …) is `incomplete`:
# a cut-off answer must never look complete (CONTRACT §8).


def _call_id(value: Any) -> str | None:
    """Tool-call ids as strings (some servers send integers); empty means absent."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value)
    return text or None


@dataclass
class _Call:
    id: str | None
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    extra_content: dict[str, Any] = field(default_factory=dict)  # Gemini's thought signature rides here

    def has_complete_arguments(self) -> bool:
        text = "".join(self.arguments).strip()
        if not text:
            return False
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            return False
        return True


class _ToolCalls:
    """Accumulates tool-call deltas, keyed by `index`, else by id, else onto the latest call."""

    def __init__(self) -> None:
        self.calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._by_id: dict[str, _Call] = {}

    def add(self, delta: Any) -> None:
        if not isinstance(delta, dict):
            return
        call = self._target(as_int(delta.get("index")), _call_id(delta.get("id")))
        function = delta.get("function")
        function = function if isinstance(function, dict) else {}
        name = function.get("name")
        if isinstance(name, str) and name and not call.name:
            call.name = name  # some servers repeat the full name in every chunk: never concatenate
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif isinstance(arguments, dict):
            call.arguments.append(json.dumps(arguments))
        if isinstance(delta.get("extra_content"), dict):
            call.extra_content.update(delta["extra_content"])

    def _target(self, index: int | None, call_id: str | None) -> _Call:
        if index is not None:
            return self._at_index(index, call_id)
        if call_id is not None:
            return self._by_id.get(call_id) or self._new(call_id)
        return self.calls[-1] if self.calls else self._new(None)

    def _at_index(self, index: int, call_id: str | None) -> _Call:
        call = self._by_index.get(index)
        # Ollama reuses index 0 for every call: a new id over finished arguments starts a new call.
        starts_new = bool(call and call_id and call.id and call_id != call.id and call.has_complete_arguments())
        if call is None or starts_new:
            call = self._new(call_id)
            self._by_index[index] = call
        elif call.id is None and call_id:
            call.id = call_id
            self._by_id[call_id] = call
        return call

    def _new(self, call_id: str | None) -> _Call:
        call = _Call(call_id)
        self.calls.append(call)
        if call_id:
            self._by_id[call_id] = call
        return call


def _tool_event(call: _Call, fallback_id: str) -> ToolUseEvent:
    parsed, error = parse_tool_input("".join(call.arguments))
    event: ToolUseEvent = {"kind": "tool_use", "id": call.id or fallback_id, "name": call.name, "input": parsed}
    if not call.name:
        error = error or "the tool call has no function name"
    if error:
        event["input_error"] = error
    if call.extra_content:
        event["provider_data"] = {"extra_content": call.extra_content}
    return event


class _ReasoningDetails:
    """OpenRouter's `reasoning_details` pieces, merged per `index` as they stream: text pieces are
    joined, every other field keeps its last non-empty value. Sent back whole on the next request."""

    JOINED = ("text", "summary", "data")

    def __init__(self) -> None:
        self.items: dict[Any, dict[str, Any]] = {}

    def add(self, pieces: Any) -> None:
        for piece in pieces if isinstance(pieces, list) else ():
            if not isinstance(piece, dict):
                continue
            item = self.items.setdefault(piece.get("index", len(self.items)), {})
            for key, value in piece.items():
                if key in self.JOINED and isinstance(value, str):
                    item[key] = item.get(key, "") + value
                elif value not in (None, "") or key not in item:
                    item[key] = value


def usage_from_wire(raw: Any) -> Usage:
    """OpenAI usage -> the four neutral keys; `prompt_tokens` includes cached tokens, so subtract them."""
    usage = zero_usage()
    if not isinstance(raw, dict):
        return usage
    details = raw.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    cached = cached or count(raw.get("prompt_cache_hit_tokens"))  # DeepSeek's name for it
    usage["input_tokens"] = max(count(raw.get("prompt_tokens")) - cached, 0)
    usage["output_tokens"] = count(raw.get("completion_tokens"))
    usage["cache_read_tokens"] = cached
    return usage


class _Turn:
    """State of one streamed response."""

    def __init__(self, secret: str = "") -> None:
        self.secret = secret
        self.tools = _ToolCalls()
        self.finish_reason: str | None = None
        self.usage: Any = None
        self.response_id = ""
        self.done_marker = False
        self.reasoning_field: str | None = None  # where this server streamed its reasoning
        self.refused = False  # the answer came as a `refusal`
        self.details = _ReasoningDetails()

    def apply(self, chunk: Any) -> Iterator[Event]:
        if not isinstance(chunk, dict):
            return
        self._check_error(chunk.get("error"))
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]  # the last one wins (Perplexity repeats a cumulative usage)
        if not self.response_id and isinstance(chunk.get("id"), str | int):
            self.response_id = str(chunk["id"])
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and as_int(choice.get("index")) in (0, None):
                yield from self._delta(choice.get("delta"))
                if choice.get("finish_reason"):
                    self.finish_reason = str(choice["finish_reason"])

    def _check_error(self, error: Any) -> None:
        if not error:
            return
        if self.finish_reason is None:
            raise payload_error(error, self.secret)
        # The answer is already complete (OpenRouter repeats "length" as an error after finishing).
        logger.warning(
            "openai: error after finish_reason %r ignored: %s",
            self.finish_reason,
            scrub(str(error), self.secret)[:MAX_MESSAGE_CHARS],
        )

    def _delta(self, delta: Any) -> Iterator[Event]:
        if not isinstance(delta, dict):
            return
        for key in ("reasoning_content", "reasoning"):  # DeepSeek/vLLM, then OpenRouter/Groq/Ollama
            if isinstance(delta.get(key), str) and delta[key]:
                self.reasoning_field = self.reasoning_field or key
                yield {"kind": "reasoning", "text": delta[key]}
                break
        self.details.add(delta.get("reasoning_details"))
        for key in ("content", "refusal"):  # a refusal is shown to the user as text
            if isinstance(delta.get(key), str) and delta[key]:
                self.refused = self.refused or key == "refusal"
                yield {"kind": "text", "text": delta[key]}
        if isinstance(delta.get("tool_calls"), list):
            for tool_delta in delta["tool_calls"]:
                self.tools.add(tool_delta)

    def finish(self) -> Iterator[Event]:
        if self.finish_reason is None and not self.done_marker:
            raise BackendError("The model's stream ended before it finished its answer.", retryable=True)
        if (self.finish_reason or "").lower() in ERROR_FINISHES:
            raise BackendError("The model server ended the answer with finish_reason 'error'.", retryable=True)
        if state := self._reasoning_state():
            yield {"kind": "reasoning", "text": "", "provider_data": state}
        prefix = f"call_{self.response_id or 'openai'}"
        for position, call in enumerate(self.tools.calls):
            yield _tool_event(call, f"{prefix}_{position}")
        yield {"kind": "done", "stop_reason": self._stop_reason(), "usage": usage_from_wire(self.usage)}

    def _stop_reason(self) -> str:
        if self.tools.calls:
            return "tool_use"
        finish = (self.finish_reason or "stop").lower()  # `[DONE]` without a finish_reason: a normal end
        stop_reason = STOP_REASON_MAP.get(finish)
        if stop_reason is None:
            logger.warning("openai: unknown finish_reason %r reported as incomplete", finish[:40])
            return "incomplete"
        return "refusal" if self.refused and stop_reason == "end_turn" else stop_reason

    def _reasoning_state(self) -> dict[str, Any]:
        """What the server needs back with this answer's reasoning: DeepSeek takes its
        `reasoning_content` back within a tool loop, OpenRouter its `reasoning_details`."""
        state: dict[str, Any] = {}
        if self.reasoning_field == "reasoning_content":
            state["field"] = "reasoning_content"
        if self.details.items:
            state["reasoning_details"] = list(self.details.items.values())
        return state


def _load_chunk(data: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise BackendError(f"The model server sent a malformed stream chunk: {data[:200]!r}", retryable=True) from None


def _error_payload(data: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return {"message": data or "no message"}


def translate(events: Iterable[SSEEvent], *, secret: str = "") -> Iterator[Event]:
    """SSE events -> `text`/`reasoning` as they arrive, then each `tool_use`, then one `done`.

    `[DONE]` or a finish_reason ends the answer normally; usage may come in a later chunk, so reading
    continues to `[DONE]` or the end of the body. A body that ends with neither is a retryable error.
    """
    turn = _Turn(secret)
    for item in events:
        if item.comment:
            continue
        data = item.data.strip()
        if item.event == "error":
            raise payload_error(_error_payload(data), secret)
        if not data:
            continue
        if data == "[DONE]":
            turn.done_marker = True
            break
        yield from turn.apply(_load_chunk(data))
    yield from turn.finish()


def completion_events(body: bytes, *, secret: str = "") -> Iterator[Event]:
    """A whole JSON answer where a stream was expected, as the same events: a server that ignores
    `stream: true` (a whole completion), or an error sent with HTTP 200 (raised at once, never
    retried into "the stream ended")."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        raise BackendError(f"The model server sent malformed JSON: {body[:200]!r}", retryable=True) from None
    if isinstance(payload, list) or (isinstance(payload, dict) and "error" in payload):
        raise payload_error(payload, secret)
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list):
        raise BackendError("The model server answered JSON that is neither a completion nor an error.", retryable=False)
    turn = _Turn(secret)
    turn.done_marker = True  # the body is all there is
    as_chunk = {
        **payload,
        "choices": [
            {"index": c.get("index"), "delta": c.get("message"), "finish_reason": c.get("finish_reason")}
            for c in choices
            if isinstance(c, dict)
        ],
    }
    yield from turn.apply(as_chunk)
    yield from turn.finish()


def parse_stream(chunks: Iterable[bytes], *, secret: str = "") -> Iterator[Event]:
    """Raw response body bytes (any chunking) -> neutral events."""
    return translate(iter_sse(chunks), secret=secret)
