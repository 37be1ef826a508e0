"""Neutral messages and tools → the Anthropic Messages API request (`POST /v1/messages`).

* roles: `user` → user, `assistant` → assistant, `tool` → user (its results become `tool_result`
  blocks). Consecutive messages of one role are merged (the API wants user and assistant to
  alternate), tool results first in their user message; empty text is never sent; a history that
  starts with the assistant gets a user "…" first.
* reasoning goes back only as the provider made it: signed thinking as `thinking` blocks,
  redacted thinking as `redacted_thinking`; reasoning without either (another provider's, or
  stripped because the chat moved to another model) is left out, and so is thinking that ends an
  answer (a stopped or failed one: the API refuses an assistant message that ends with thinking).
* `cache_control` marks the system prompt, the last tool and the last message's last block when
  prompt caching is on (three of the API's four breakpoints).
* with `AGENT_REASONING` on, a model that thinks adaptively (`claude_thinking`: Opus and Sonnet
  4.6 and later, Haiku 5 and later, Fable, Mythos) gets `thinking: {"type": "adaptive", "display":
  "summarized"}` (the newest models return no thinking text unless asked) and `output_config.effort`;
  Claude 3.7 to 4.5 get `thinking: {"type": "enabled"}` with a budget below `max_tokens`. With it
  off (`claude_thinking_off`) Claude before 5 is asked nothing, Opus and Sonnet 5 to 5.4 and Haiku 5
  get `"disabled"`, Sonnet 5.5 `"between_tools"` (it refuses "disabled"), and the models that
  always think (Opus 5.5, Fable, Mythos) adaptive thinking with its text shown: they write what
  they say between tool calls as thinking, and by default return none of it.
* a model that binds each thinking block to what came before it (`binds_thinking`: Fable and
  Mythos 5.1, Opus, Sonnet and Haiku 5.5, and later) refuses a block whose prefix changed; ours
  change (an old part of the chat summarised, the tools a narrowed grant offers), so its requests
  let it drop such blocks (`thinking.block_binding`, beta `thinking-binding-controls-2026-08-01`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agent.backends.base import unknown_part
from agent.backends.reasoning import (
    ADAPTIVE_THINKING,
    Reasoning,
    binds_thinking,
    claude_off_request,
    claude_thinking,
)
from agent.exceptions import BackendError
from agent.values import DocumentPart, ImagePart, NeutralMessage, Part, ReasoningPart, Role, ToolResultPart, ToolSpec

PLACEHOLDER_TEXT = "…"
# What lets a model that binds its thinking to the conversation drop a block whose prefix changed
# (`binds_thinking`) instead of refusing the request: a summarised history, or tools a grant narrowed.
BLOCK_BINDING_BETA = "thinking-binding-controls-2026-08-01"
DROP_CHANGED_BLOCKS = {"prefix_mismatch_behavior": "drop_block"}
CACHE_CONTROL = {"type": "ephemeral"}
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_TOOL_ID_RE = re.compile(r"[a-zA-Z0-9_-]{1,200}")


def build_body(
    *,
    system: str,
    messages: Sequence[NeutralMessage],
    tools: Sequence[ToolSpec],
    model: str,
    max_tokens: int,
    inference: dict[str, Any] | None = None,
    reasoning: Reasoning | None = None,
    cache: bool = False,
) -> dict[str, Any]:
    """The JSON body of one streamed Messages call."""
    inference = inference or {}
    thinking: dict[str, Any] | None = None
    if reasoning is None:
        thinking, messages = claude_off_request(model, messages)
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": wire_messages(messages),
        "stream": True,
    }
    if system and system.strip():
        body["system"] = [{"type": "text", "text": system}]
    if tools:
        body["tools"] = [_tool(tool) for tool in tools]
    if reasoning is not None:
        thinking = _thinking(model, reasoning, max_tokens, body["messages"])
    thinks = thinking is not None and thinking["type"] != "disabled"
    if thinking is not None and thinks and binds_thinking(model):
        thinking = {**thinking, "block_binding": dict(DROP_CHANGED_BLOCKS)}
    if thinking:
        body["thinking"] = thinking
        if thinking["type"] == "adaptive" and reasoning is not None:
            body["output_config"] = {"effort": reasoning.effort}
    for neutral, wire in (("temperature", "temperature"), ("top_p", "top_p")):
        if inference.get(neutral) is not None and not thinks:  # thinking takes no sampling changes
            body[wire] = inference[neutral]
    stop = inference.get("stop")
    if stop:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else [s for s in stop if s]
    if cache:
        _mark_cache(body)
    return body


def can_think_now(messages: Sequence[Mapping[str, Any]]) -> bool:
    """Claude refuses budgeted thinking when the tool loop in progress began without it: the last assistant
    message, if it called tools, must start with a thinking block (it may have none because thinking
    was off then, or its state was left out: it came from another model). Then this call goes
    without thinking."""
    last = next((m for m in reversed(messages) if m["role"] == "assistant"), None)
    if last is None or all(block["type"] != "tool_use" for block in last["content"]):
        return True
    return last["content"][0]["type"] in ("thinking", "redacted_thinking")


def _thinking(
    model: str, reasoning: Reasoning, max_tokens: int, messages: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The `thinking` request for the model; None for a model without thinking, a budget that does
    not fit in `max_tokens`, or a tool loop that began without budgeted thinking."""
    match claude_thinking(model):
        case "adaptive":  # the model decides when to think, so any tool loop may go on with it
            return dict(ADAPTIVE_THINKING)
        case "budget" if can_think_now(messages) and (budget := reasoning.budget_below(max_tokens)):
            return {"type": "enabled", "budget_tokens": budget}
        case _:
            return None


def _mark_cache(body: dict[str, Any]) -> None:
    if body.get("system"):
        body["system"][-1]["cache_control"] = dict(CACHE_CONTROL)
    if body.get("tools"):
        body["tools"][-1]["cache_control"] = dict(CACHE_CONTROL)
    if body["messages"] and body["messages"][-1]["content"]:
        last = body["messages"][-1]["content"][-1]
        if last.get("type") not in ("thinking", "redacted_thinking"):  # (these take no cache_control)
            last["cache_control"] = dict(CACHE_CONTROL)


def _tool(tool: ToolSpec) -> dict[str, Any]:
    spec = {"name": tool["name"], "input_schema": tool["input_schema"] or {"type": "object", "properties": {}}}
    if tool["description"]:
        spec["description"] = tool["description"]
    return spec


def wire_messages(messages: Sequence[NeutralMessage]) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for message in messages:
        role = _role(message["role"])
        blocks = [b for part in message["parts"] if (b := _block(part)) is not None]
        if role == "assistant":
            blocks = _without_trailing_thinking(blocks)
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": blocks})
    for wire_message in merged:
        if wire_message["role"] == "user":
            wire_message["content"].sort(key=lambda block: block["type"] != "tool_result")
    if merged and merged[0]["role"] == "assistant":
        merged.insert(0, {"role": "user", "content": [{"type": "text", "text": PLACEHOLDER_TEXT}]})
    return merged


def _without_trailing_thinking(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An assistant message may not end with thinking ("The final block in an assistant message
    cannot be `thinking`", a 400 on every later call of the chat). An answer stopped or failed after
    its thinking and before what it led to ends so: that thinking stays out."""
    end = len(blocks)
    while end and blocks[end - 1]["type"] in ("thinking", "redacted_thinking"):
        end -= 1
    return blocks[:end]


def _role(role: Role) -> str:
    match role:
        case "user" | "tool":
            return "user"
        case "assistant":
            return "assistant"
        case _:
            raise BackendError(f"The Anthropic API cannot take a message with role {role!r}.", retryable=False)


def _block(part: Part) -> dict[str, Any] | None:
    match part["type"]:
        case "text":
            text = part["text"]
            return {"type": "text", "text": text} if text.strip() else None
        case "reasoning":
            return _reasoning(part)
        case "tool_use":
            return {
                "type": "tool_use",
                "id": tool_use_id(part["id"]),
                "name": part["name"],
                "input": part["input"],
            }
        case "tool_result":
            return _tool_result(part)
        case "image":
            return _image(part)
        case "document":
            return _document(part)
        case _:
            unknown_part(part, f"The Anthropic API cannot take a message part of type {part['type']!r}.")


def _reasoning(part: ReasoningPart) -> dict[str, Any] | None:
    redacted = (part.get("provider_data") or {}).get("redacted")
    if isinstance(redacted, str) and redacted:
        return {"type": "redacted_thinking", "data": redacted}
    if part.get("signature"):
        return {"type": "thinking", "thinking": part["text"], "signature": part["signature"]}
    return None


def _tool_result(part: ToolResultPart) -> dict[str, Any]:
    result = part["result"]
    if isinstance(result, list):
        result = {"items": result}
    is_error = part["status"] == "error"
    if is_error and not result:
        result = {"error": "The tool call failed."}
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": tool_use_id(part["tool_use_id"]),
        "content": json.dumps(result, ensure_ascii=False, default=str),
    }
    if is_error:
        block["is_error"] = True
    return block


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _image(part: ImagePart) -> dict[str, Any]:
    media_type = part["media_type"].lower()
    if media_type == "image/jpg":
        media_type = "image/jpeg"
    if media_type not in IMAGE_TYPES:
        raise BackendError(f"The Anthropic API cannot take images of type {media_type!r}.", retryable=False)
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": _b64(part["data"])}}


def _document(part: DocumentPart) -> dict[str, Any]:
    media_type = part["media_type"].lower().split(";")[0].strip()
    name = part["name"] or "document"
    if media_type == "application/pdf":
        source = {"type": "base64", "media_type": media_type, "data": _b64(part["data"])}
    elif media_type in ("text/plain", "text/markdown", "text/csv", "text/html"):
        source = {"type": "text", "media_type": "text/plain", "data": part["data"].decode("utf-8", "replace")}
    else:  # the model is told what was attached rather than the request failing
        return {"type": "text", "text": f"[Attached document {name!r} ({media_type}) cannot be read here.]"}
    return {"type": "document", "source": source, "title": name[:200]}


def tool_use_id(value: Any) -> str:
    """Tool-use ids as the API accepts them (`[a-zA-Z0-9_-]+`); another provider's get a stable hash."""
    text = str(value or "")
    return text if _TOOL_ID_RE.fullmatch(text) else "toolu_" + hashlib.sha256(text.encode()).hexdigest()[:32]
