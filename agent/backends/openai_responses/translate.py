"""Responses API stream events -> the four neutral event kinds, pure (`translate(sse_events)`).

Every event is a JSON object whose `type` names it (the SSE `event:` line repeats it). Text deltas
(`response.output_text.delta`, and a refusal's `response.refusal.delta`) stream as `text`; reasoning
summary deltas as `reasoning`. Output items open with `response.output_item.added` and close with
`response.output_item.done`: a closed function call becomes one `tool_use` (its arguments as
`response.function_call_arguments.delta` joined, unless the item or `.done` brings them whole); a
closed reasoning item with `encrypted_content` becomes a `reasoning` event whose provider state is the
item, for the next call of the tool loop. `response.completed` or `response.incomplete` ends the
answer with its usage; `response.failed` and `error` raise. A stream that ends before a terminal
event is a retryable error, never a silent success.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agent import logcontext
from agent.backends.base import Event, parse_tool_input, zero_usage
from agent.backends.openai.errors import count, payload_error
from agent.backends.openai_responses.wire import REASONING_ITEM_KEYS
from agent.backends.sse import SSEEvent, iter_sse
from agent.exceptions import BackendError
from agent.values import ToolUseEvent, Usage

logger = logcontext.get_logger("agent.backends")

#: `incomplete_details.reason` of a `response.incomplete` -> the neutral stop reason; any other is
#: `incomplete` (CONTRACT §8: a cut-off answer never looks complete).
INCOMPLETE_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "content_filtered"}


def usage_from_response(raw: Any) -> Usage:
    """Responses usage -> the four neutral keys; `input_tokens` includes the cached ones, so they
    are subtracted (and reported as cache reads)."""
    usage = zero_usage()
    if not isinstance(raw, dict):
        return usage
    details = raw.get("input_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    usage["input_tokens"] = max(count(raw.get("input_tokens")) - cached, 0)
    usage["output_tokens"] = count(raw.get("output_tokens"))
    usage["cache_read_tokens"] = cached
    return usage


@dataclass
class _Call:
    call_id: str
    name: str
    pieces: list[str] = field(default_factory=list)
    arguments: str | None = None  # whole, when `.done` brought them

    def tool_event(self, item: dict[str, Any]) -> ToolUseEvent:
        raw = item.get("arguments")
        raw = raw if isinstance(raw, str) else self.arguments if self.arguments is not None else "".join(self.pieces)
        parsed, error = parse_tool_input(raw)
        name = str(item.get("name") or self.name)
        if not name:
            error = error or "the tool call has no function name"
        event: ToolUseEvent = {
            "kind": "tool_use",
            "id": str(item.get("call_id") or self.call_id),
            "name": name,
            "input": parsed,
        }
        if error:
            event["input_error"] = error
        return event


class _Response:
    """One streamed response's state."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.calls: dict[str, _Call] = {}  # open function calls, by item id (what argument events name)
        self.tool_used = False
        self.refused = False
        self.ended: str | None = None  # the terminal event's type
        self.final: dict[str, Any] = {}  # the response object it carried

    def apply(self, kind: str, data: dict[str, Any]) -> Iterator[Event]:
        match kind:
            case "response.output_text.delta" | "response.refusal.delta":
                if isinstance(delta := data.get("delta"), str) and delta:
                    self.refused = self.refused or kind == "response.refusal.delta"
                    yield {"kind": "text", "text": delta}  # a refusal is shown to the user as text
            case "response.reasoning_summary_text.delta":
                if isinstance(delta := data.get("delta"), str) and delta:
                    yield {"kind": "reasoning", "text": delta}
            case "response.reasoning_summary_part.added" if count(data.get("summary_index")):
                yield {"kind": "reasoning", "text": "\n\n"}  # each summary part is a paragraph of its own
            case "response.output_item.added":
                self._open(data.get("item"))
            case "response.function_call_arguments.delta":
                if (call := self.calls.get(str(data.get("item_id")))) and isinstance(data.get("delta"), str):
                    call.pieces.append(data["delta"])
            case "response.function_call_arguments.done":
                if (call := self.calls.get(str(data.get("item_id")))) and isinstance(data.get("arguments"), str):
                    call.arguments = data["arguments"]
            case "response.output_item.done":
                yield from self._close(data.get("item"))
            case "response.completed" | "response.incomplete":
                self.ended = kind
                self.final = data["response"] if isinstance(data.get("response"), dict) else {}
            case "response.failed":
                failed = response if isinstance(response := data.get("response"), dict) else {}
                raise payload_error(failed.get("error") or {"message": "the response failed"}, self.secret)
            case "error":
                raise payload_error(data, self.secret)
            case _:
                pass  # created, in_progress, content parts, `.done` echoes, kinds added later

    def _open(self, item: Any) -> None:
        if isinstance(item, dict) and item.get("type") == "function_call":
            call = _Call(str(item.get("call_id") or ""), str(item.get("name") or ""))
            if isinstance(item.get("arguments"), str) and item["arguments"]:
                call.pieces.append(item["arguments"])
            self.calls[str(item.get("id"))] = call

    def _close(self, item: Any) -> Iterator[Event]:
        if not isinstance(item, dict):
            return
        match item.get("type"):
            case "function_call":
                call = self.calls.pop(str(item.get("id")), None) or _Call("", "")
                self.tool_used = True
                yield call.tool_event(item)
            case "reasoning" if item.get("encrypted_content"):
                kept = {key: item[key] for key in REASONING_ITEM_KEYS if key in item}
                yield {"kind": "reasoning", "text": "", "provider_data": {"item": kept}}

    def finish(self) -> Iterator[Event]:
        if self.ended is None:
            raise BackendError("The model's stream ended before it finished its answer.", retryable=True)
        if self.calls and self.ended == "response.completed":  # calls whose item never closed
            for call in self.calls.values():
                self.tool_used = True
                yield call.tool_event({})
        yield {
            "kind": "done",
            "stop_reason": self._stop_reason(),
            "usage": usage_from_response(self.final.get("usage")),
        }

    def _stop_reason(self) -> str:
        if self.tool_used:
            return "tool_use"
        if self.ended == "response.incomplete":
            details = self.final.get("incomplete_details")
            reason = str(details.get("reason") if isinstance(details, dict) else None)
            if reason not in INCOMPLETE_REASONS:
                logger.warning("openai-responses: unknown incomplete reason %r reported as incomplete", reason[:40])
            return INCOMPLETE_REASONS.get(reason, "incomplete")
        return "refusal" if self.refused else "end_turn"


def _load(data: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise BackendError(f"The model server sent a malformed stream event: {data[:200]!r}", retryable=True) from None


def translate(events: Iterable[SSEEvent], *, secret: str = "") -> Iterator[Event]:
    """SSE events -> text and reasoning as they come, each tool call when its item closes, one `done`."""
    response = _Response(secret)
    for item in events:
        data = item.data.strip()
        if item.comment or not data:
            continue
        if data == "[DONE]":  # (some compatible servers end so; without a terminal event it is a cut)
            break
        payload = _load(data)
        if isinstance(payload, dict):
            yield from response.apply(str(payload.get("type") or item.event), payload)
        if response.ended:
            break
    yield from response.finish()


def response_events(body: bytes, *, secret: str = "") -> Iterator[Event]:
    """A whole JSON answer where a stream was expected, as the same events: a response object (a
    server that ignores `stream: true`), or an error sent with HTTP 200 (raised at once)."""
    payload = _load(body.decode("utf-8", "replace"))
    if isinstance(payload, list) or (isinstance(payload, dict) and payload.get("error")):
        raise payload_error(payload, secret)
    if not isinstance(payload, dict) or not isinstance(payload.get("output"), list):
        raise BackendError("The model server answered JSON that is neither a response nor an error.", retryable=False)
    response = _Response(secret)
    for item in payload["output"]:
        yield from _whole_item(response, item)
    status = payload.get("status")
    if status not in ("completed", "incomplete"):
        raise BackendError(f"The model server's response has status {str(status)[:40]!r}.", retryable=False)
    yield from response.apply(f"response.{status}", {"response": payload})
    yield from response.finish()


def _whole_item(response: _Response, item: Any) -> Iterator[Event]:
    """One output item of a whole response, as the events its stream would have brought."""
    if not isinstance(item, dict):
        return
    match item.get("type"):
        case "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") in ("output_text", "refusal"):
                    delta = part.get("text") or part.get("refusal")
                    yield from response.apply(f"response.{part['type']}.delta", {"delta": delta})
        case "reasoning":
            for number, part in enumerate(item.get("summary") or []):
                if isinstance(part, dict):
                    yield from response.apply("response.reasoning_summary_part.added", {"summary_index": number})
                    yield from response.apply("response.reasoning_summary_text.delta", {"delta": part.get("text")})
    yield from response.apply("response.output_item.done", {"item": item})


def parse_stream(chunks: Iterable[bytes], *, secret: str = "") -> Iterator[Event]:
    """Raw response body bytes (any chunking) -> neutral events."""
    return translate(iter_sse(chunks), secret=secret)
