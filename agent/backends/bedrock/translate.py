"""Bedrock `converse_stream` events (the dicts boto3 yields) → the four neutral event kinds.

`_Translator`: text deltas → `text`; reasoning text deltas → `reasoning`; a
reasoning block's signature (it may come in pieces) is gathered and emitted when its block stops as
one `{"kind": "reasoning", "text": "", "signature": ...}` event; redacted reasoning is dropped (the
contract has no place for it). Tool input pieces are gathered per block index and parsed once, at
`contentBlockStop`. `metadata` (usage) arrives after `messageStop`, so the stream is read to its end
before the single `done`. A stream that ends without `messageStop` is a retryable BackendError.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agent.backends.base import Event, zero_usage
from agent.backends.bedrock.errors import _STREAM_EXCEPTION_KEYS, _error_from_code
from agent.exceptions import BackendError

STOP_REASON_MAP = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "guardrail_intervened": "content_filtered",
    "content_filtered": "content_filtered",
    # The output was cut because the context window filled up: for the caller that is a truncation.
    "model_context_window_exceeded": "max_tokens",
}


class _Translator:
    """Turns the dicts boto3 yields into the four neutral event kinds, one call's state."""

    def __init__(self) -> None:
        self.tool_blocks: dict[int, dict[str, Any]] = {}
        self.signatures: dict[int, list[str]] = {}
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
                case _ if key in _STREAM_EXCEPTION_KEYS:
                    raise _error_from_code(key, body.get("message") or "", None, None, in_stream=True)
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

    def _stop_block(self, index: int) -> Iterator[Event]:
        if (signature := self.signatures.pop(index, None)) is not None:
            yield {"kind": "reasoning", "text": "", "signature": "".join(signature)}
        if (block := self.tool_blocks.pop(index, None)) is not None:
            self.tool_used = True
            yield _tool_use_event(block)

    def _message_stop(self, body: dict[str, Any]) -> Iterator[Event]:
        for index in sorted(set(self.signatures) | set(self.tool_blocks)):
            yield from self._stop_block(index)
        self.stop_reason = str(body.get("stopReason") or "end_turn")

    def _metadata(self, body: dict[str, Any]) -> None:
        usage = body.get("usage") or {}
        for key, wire in (
            ("input_tokens", "inputTokens"),
            ("output_tokens", "outputTokens"),
            ("cache_read_tokens", "cacheReadInputTokens"),
            ("cache_write_tokens", "cacheWriteInputTokens"),
        ):
            self.usage[key] = int(usage.get(wire) or 0)

    def done(self) -> Event:
        if self.stop_reason is None:
            raise BackendError("The Bedrock stream ended before the model finished its message.", retryable=True)
        if self.tool_used:
            stop_reason = "tool_use"
        else:
            stop_reason = STOP_REASON_MAP.get(self.stop_reason, "end_turn")
            stop_reason = "end_turn" if stop_reason == "tool_use" else stop_reason
        return {"kind": "done", "stop_reason": stop_reason, "usage": dict(self.usage)}


def _tool_use_event(block: dict[str, Any]) -> Event:
    event: Event = {"kind": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
    raw = "".join(block["input"]).strip()
    if not raw:
        return event
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        event["input_error"] = f"The tool input is not valid JSON ({exc.msg} at position {exc.pos})."
        return event
    if isinstance(parsed, dict):
        event["input"] = parsed
    else:
        event["input_error"] = f"The tool input is a JSON {type(parsed).__name__}, not an object."
    return event
