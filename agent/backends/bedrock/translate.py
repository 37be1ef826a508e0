"""Bedrock `converse_stream` events (the dicts boto3 yields) → the four neutral event kinds.

`Translator`: text deltas → `text`; reasoning text deltas → `reasoning`; a
reasoning block's signature (it may come in pieces) is gathered and emitted when its block stops as
one `{"kind": "reasoning", "text": "", "signature": ...}` event; redacted reasoning (bytes) is
gathered the same way and emitted as `{"kind": "reasoning", "text": "", "provider_data":
{"redacted": <base64>}}`, kept to be sent back. Tool input pieces are gathered per block index and
parsed once, at `contentBlockStop`. `metadata` (usage) arrives after `messageStop`, so the stream is read to its end
before the single `done`. A stream that ends without `messageStop` is a retryable BackendError.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from agent import logcontext
from agent.backends.base import Event, parse_tool_input, zero_usage
from agent.backends.bedrock.errors import STREAM_EXCEPTION_KEYS, error_from_code
from agent.exceptions import BackendError
from agent.values import ToolUseEvent, UsageKey

logger = logcontext.get_logger("agent.backends")

STOP_REASON_MAP = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "guardrail_intervened": "content_filtered",
    "content_filtered": "content_filtered",
    # The output was cut because the context window filled up: for the caller that is a truncation.
    "model_context_window_exceeded": "max_tokens",
    # The model's output or tool call could not be read: the answer is not complete. Any stop
    # reason not named here is `incomplete` too (CONTRACT §8), never a silent end_turn.
    "malformed_model_output": "incomplete",
    "malformed_tool_use": "incomplete",
}


_USAGE_WIRE: tuple[tuple[UsageKey, str], ...] = (
    ("input_tokens", "inputTokens"),
    ("output_tokens", "outputTokens"),
    ("cache_read_tokens", "cacheReadInputTokens"),
    ("cache_write_tokens", "cacheWriteInputTokens"),
)


class Translator:
    """Turns the dicts boto3 yields into the four neutral event kinds, one call's state."""

    def __init__(self) -> None:
        self.tool_blocks: dict[int, dict[str, Any]] = {}
        self.signatures: dict[int, list[str]] = {}
        self.redacted: dict[int, list[bytes]] = {}
        self.tool_used = False
        self.stop_reason: str | None = None
        self.usage = zero_usage()

    def feed(self, event: dict[str, Any]) -> Iterator[Event]:
        for key, body in event.items():
            body = body or {}
            match key:
                case "contentBlockStart":
                    self._start_block(body)
                case "contentBlockDelta":
                    yield from self._delta(body)
                case "contentBlockStop":
                    yield from self._stop_block(body.get("contentBlockIndex", 0))
                case "messageStop":
                    yield from self._message_stop(body)
                case "metadata":
                    self._metadata(body)
                case _ if key in STREAM_EXCEPTION_KEYS:
                    raise error_from_code(key, body.get("message") or "", None, None, in_stream=True)
                case _:
                    pass  # messageStart and event kinds this adapter does not know: nothing to say.

    def _start_block(self, body: dict[str, Any]) -> None:
        tool = (body.get("start") or {}).get("toolUse")
        if tool is not None:
            block = self._tool_block(body.get("contentBlockIndex", 0))
            block["id"] = tool.get("toolUseId") or block["id"]
            block["name"] = tool.get("name") or block["name"]

    def _tool_block(self, index: int) -> dict[str, Any]:
        return self.tool_blocks.setdefault(index, {"id": f"tooluse_{index}", "name": "", "input": []})

    def _delta(self, body: dict[str, Any]) -> Iterator[Event]:
        index = body.get("contentBlockIndex", 0)
        delta = body.get("delta") or {}
        if text := delta.get("text"):
            yield {"kind": "text", "text": text}
        if (tool := delta.get("toolUse")) is not None:
            self._tool_block(index)["input"].append(tool.get("input") or "")
        reasoning = delta.get("reasoningContent") or {}
        if reasoning_text := reasoning.get("text"):
            yield {"kind": "reasoning", "text": reasoning_text}
        if signature := reasoning.get("signature"):
            self.signatures.setdefault(index, []).append(signature)
        if redacted := reasoning.get("redactedContent"):
            self.redacted.setdefault(index, []).append(_as_bytes(redacted))

    def _stop_block(self, index: int) -> Iterator[Event]:
        if (signature := self.signatures.pop(index, None)) is not None:
            yield {"kind": "reasoning", "text": "", "signature": "".join(signature)}
        if (redacted := self.redacted.pop(index, None)) is not None:
            data = base64.b64encode(b"".join(redacted)).decode("ascii")
            yield {"kind": "reasoning", "text": "", "provider_data": {"redacted": data}}
        if (block := self.tool_blocks.pop(index, None)) is not None:
            self.tool_used = True
            yield _tool_use_event(block)

    def _message_stop(self, body: dict[str, Any]) -> Iterator[Event]:
        for index in sorted(set(self.signatures) | set(self.redacted) | set(self.tool_blocks)):
            yield from self._stop_block(index)
        self.stop_reason = str(body.get("stopReason") or "end_turn")

    def _metadata(self, body: dict[str, Any]) -> None:
        usage = body.get("usage") or {}
        for key, wire in _USAGE_WIRE:
            self.usage[key] = int(usage.get(wire) or 0)

    def done(self) -> Event:
        if self.stop_reason is None:
            raise BackendError("The Bedrock stream ended before the model finished its message.", retryable=True)
        return {"kind": "done", "stop_reason": self._neutral_stop(), "usage": self.usage.copy()}

    def _neutral_stop(self) -> str:
        if self.tool_used:
            return "tool_use"
        stop_reason = STOP_REASON_MAP.get(str(self.stop_reason))
        if stop_reason is None:
            logger.warning("bedrock: unknown stopReason %r reported as incomplete", str(self.stop_reason)[:40])
            return "incomplete"
        return "end_turn" if stop_reason == "tool_use" else stop_reason  # (no tool block: nothing to run)


def _tool_use_event(block: dict[str, Any]) -> ToolUseEvent:
    parsed, error = parse_tool_input("".join(block["input"]))
    event: ToolUseEvent = {"kind": "tool_use", "id": block["id"], "name": block["name"], "input": parsed}
    if error:
        event["input_error"] = error
    return event


def _as_bytes(value: Any) -> bytes:
    """boto3 gives `redactedContent` as bytes; base64 text (a hand-made stream) is decoded."""
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    try:
        return base64.b64decode(str(value), validate=True)
    except ValueError:
        return str(value).encode()
