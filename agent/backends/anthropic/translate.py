"""Anthropic Messages SSE events → the four neutral event kinds, pure (`translate(sse_events)`).

`message_start` carries the input usage; each content block is opened by `content_block_start`,
filled by deltas and closed by `content_block_stop`: text deltas stream as `text`, thinking deltas as
`reasoning`; a thinking block's signature is emitted when the block stops (`{"kind": "reasoning",
"text": "", "signature": ...}`), a redacted thinking block as provider state, a tool call's
`input_json_delta` fragments are joined and parsed once, at its stop. `message_delta` brings the
stop reason and the cumulative usage; `message_stop` ends the message. An `error` event raises;
a body that ends before `message_stop` is a retryable error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from agent import logcontext
from agent.backends.anthropic.errors import error_event
from agent.backends.base import Event, parse_tool_input, zero_usage
from agent.backends.sse import SSEEvent
from agent.exceptions import BackendError
from agent.values import ToolUseEvent, UsageKey

logger = logcontext.get_logger("agent.backends")

STOP_REASON_MAP = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "refusal": "refusal",
    "model_context_window_exceeded": "max_tokens",
    # A server tool's long turn was paused: the answer is not finished (this engine runs no server tools).
    "pause_turn": "incomplete",
}
USAGE_KEYS: dict[str, UsageKey] = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_write_tokens",
}


class _Message:
    """One streamed message's state."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.blocks: dict[int, dict[str, Any]] = {}
        self.usage = zero_usage()
        self.stop_reason: str | None = None
        self.stopped = False
        self.tool_used = False

    def apply(self, kind: str, data: dict[str, Any]) -> Iterator[Event]:
        match kind:
            case "message_start":
                self._usage((data.get("message") or {}).get("usage"))
            case "content_block_start":
                self.blocks[_index(data)] = dict(data.get("content_block") or {}, pieces=[])
            case "content_block_delta":
                yield from self._delta(_index(data), data.get("delta") or {})
            case "content_block_stop":
                yield from self._stop_block(_index(data))
            case "message_delta":
                delta = data.get("delta") or {}
                if delta.get("stop_reason"):
                    self.stop_reason = str(delta["stop_reason"])
                self._usage(data.get("usage"))
            case "message_stop":
                self.stopped = True
            case "error":
                raise error_event(data, self.secret)
            case _:
                pass  # ping, and event kinds added later: nothing to say

    def _delta(self, index: int, delta: dict[str, Any]) -> Iterator[Event]:
        block = self.blocks.setdefault(index, {"type": "text", "pieces": []})
        match delta.get("type"):
            case "text_delta":
                if text := delta.get("text"):
                    yield {"kind": "text", "text": text}
            case "thinking_delta":
                if thinking := delta.get("thinking"):
                    yield {"kind": "reasoning", "text": thinking}
            case "signature_delta":
                block["signature"] = block.get("signature", "") + str(delta.get("signature") or "")
            case "input_json_delta":
                block["pieces"].append(str(delta.get("partial_json") or ""))

    def _stop_block(self, index: int) -> Iterator[Event]:
        block = self.blocks.pop(index, None) or {}
        match block.get("type"):
            case "thinking" if block.get("signature"):
                yield {"kind": "reasoning", "text": "", "signature": block["signature"]}
            case "redacted_thinking" if block.get("data"):
                yield {"kind": "reasoning", "text": "", "provider_data": {"redacted": block["data"]}}
            case "tool_use":
                self.tool_used = True
                yield _tool_use_event(block)

    def _usage(self, raw: Any) -> None:
        for wire, neutral in USAGE_KEYS.items():
            value = raw.get(wire) if isinstance(raw, dict) else None
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                self.usage[neutral] = value  # message_delta's figures are cumulative: the last wins

    def done(self) -> Event:
        if not self.stopped and self.stop_reason is None:
            raise BackendError("The Anthropic stream ended before the model finished its message.", retryable=True)
        for index in sorted(self.blocks):  # blocks never closed (a server that skipped their stop)
            for event in self._stop_block(index):
                if event["kind"] == "tool_use":
                    raise BackendError("The Anthropic stream ended inside a tool call.", retryable=True)
        return {"kind": "done", "stop_reason": self._neutral_stop(), "usage": self.usage.copy()}

    def _neutral_stop(self) -> str:
        if self.tool_used:
            return "tool_use"
        stop_reason = STOP_REASON_MAP.get(str(self.stop_reason))
        if stop_reason is None:
            logger.warning("anthropic: unknown stop_reason %r reported as incomplete", str(self.stop_reason)[:40])
            return "incomplete"
        return "end_turn" if stop_reason == "tool_use" else stop_reason


def _index(data: dict[str, Any]) -> int:
    index = data.get("index")
    return index if isinstance(index, int) else 0


def _tool_use_event(block: dict[str, Any]) -> ToolUseEvent:
    name = str(block.get("name") or "")
    raw = "".join(block["pieces"])
    if raw.strip():
        parsed, error = parse_tool_input(raw)
    else:  # no fragments: the input came whole with the block's start
        start = block.get("input")
        parsed, error = (start if isinstance(start, dict) else {}), None
    event: ToolUseEvent = {"kind": "tool_use", "id": str(block.get("id") or ""), "name": name, "input": parsed}
    if error:
        event["input_error"] = error
    return event


def translate(events: Iterable[SSEEvent], *, secret: str = "") -> Iterator[Event]:
    """SSE events → text and reasoning as they come, each tool call at its block's stop, one `done`."""
    message = _Message(secret)
    for item in events:
        if item.comment or not item.data.strip():
            continue
        try:
            data = json.loads(item.data)
        except (ValueError, RecursionError):
            raise BackendError(
                f"The Anthropic API sent a malformed event: {item.data[:200]!r}", retryable=True
            ) from None
        if not isinstance(data, dict):
            continue
        kind = str(data.get("type") or item.event)
        yield from message.apply(kind, data)
        if message.stopped:
            break
    yield message.done()
