"""Neutral messages and tools → the keyword arguments for Bedrock's `converse_stream`.

How `build_request` translates:

* roles: `user` → user, `assistant` → assistant, `tool` → user (its `tool_result` parts become
  `toolResult` blocks). Consecutive messages of one role are merged into one, because Bedrock wants
  strict user/assistant alternation; so all results of one tool cycle, and a user text that follows
  them, travel in the ONE user message after the assistant's `toolUse` message. Inside a user
  message the `toolResult` blocks come first (Claude rejects text before tool results).
* empty or whitespace-only text is never sent; unsigned reasoning is dropped (Bedrock cannot take it
  back); a message left with no blocks is dropped and its neighbours merge. The only placeholder is a
  user text "…" put first when the history would otherwise start with an assistant message (Bedrock
  requires a user message first). An empty history is sent as is and Bedrock answers a
  ValidationException: there is nothing sensible to invent.
* an error tool result never has empty content (`{"error": "The tool call failed."}`).
* `toolConfig` is sent whenever tools are offered OR the history holds tool blocks (Bedrock rejects
  a history with toolUse/toolResult and no toolConfig). Tools named in the history but not offered
  this call get a bare spec (`{"type": "object"}` schema); the tool runner still refuses any tool that
  is not available, so offering the name costs nothing.
* tool-use ids that Bedrock's pattern would reject (ids from another provider) are replaced by a
  stable hash, the same on the `toolUse` and its `toolResult`.
* redacted reasoning (provider state `{"redacted": <base64>}`) goes back as `redactedContent`
  bytes; `toolResult.status` is sent only to Claude models (`takes_result_status`).
* with `AGENT_REASONING` on, Claude gets `additionalModelRequestFields`: `thinking: {"type":
  "adaptive", "display": "summarized"}` and `output_config.effort` where the model thinks adaptively
  (`claude_thinking`: Opus and Sonnet 4.6 and later, Haiku 5 and later, Fable, Mythos), `thinking:
  {"type": "enabled"}` with a budget below `maxTokens` for Claude 3.7 to 4.5; with it off, Claude 5
  and later get the `thinking` of `claude_thinking_off` (the same as on the Anthropic API); with prompt caching,
  the families that cache get `cachePoint` blocks (`caches_prompts`).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from typing import Any

from agent.backends.base import unknown_part
from agent.backends.reasoning import (
    ADAPTIVE_THINKING,
    Reasoning,
    claude_off_request,
    claude_thinking,
)
from agent.exceptions import BackendError
from agent.values import DocumentPart, ImagePart, NeutralMessage, Part, ReasoningPart, Role, ToolResultPart, ToolSpec

TOOL_NAME_PATTERN = r"[a-zA-Z0-9_-]{1,64}"
TOOL_NAME_RE = re.compile(TOOL_NAME_PATTERN)
_TOOL_USE_ID_RE = re.compile(r"[a-zA-Z0-9_.:-]{1,64}")
PLACEHOLDER_TEXT = "…"
DEFAULT_MAX_TOKENS = 4096  # (the loop always sends one; a direct caller may not)

IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
_DOCUMENT_EXTENSIONS = frozenset(DOCUMENT_FORMATS.values())


def validate_tool_name(name: str) -> str:
    """Return `name` if Bedrock accepts it as a tool name; raise ValueError otherwise."""
    if not isinstance(name, str) or not TOOL_NAME_RE.fullmatch(name):
        raise ValueError(f"Tool name {name!r} must be 1 to 64 letters, digits, underscores or hyphens.")
    return name


def build_request(
    *,
    system: str,
    messages: Sequence[NeutralMessage],
    tools: Sequence[ToolSpec],
    model: str,
    inference: dict[str, Any] | None = None,
    reasoning: Reasoning | None = None,
    cache: bool = False,
) -> dict[str, Any]:
    """The keyword arguments for `converse_stream`; `reasoning` (`AGENT_REASONING`) turns Claude's
    extended thinking on where the model has it; `cache` adds prompt-cache points (`caches_prompts`)."""
    off = None
    if reasoning is None:
        off, messages = claude_off_request(model, messages)
    wire = wire_messages(messages, result_status=takes_result_status(model))
    request: dict[str, Any] = {"modelId": model, "messages": wire}
    if system and system.strip():
        request["system"] = [{"text": system}]
    config = _inference_config(inference or {})
    if reasoning is None:
        fields = {"thinking": off} if off else None
    else:
        fields = _thinking(model, reasoning, config, wire)
    if fields:
        request["additionalModelRequestFields"] = fields
        if fields["thinking"]["type"] != "disabled":
            config.pop("temperature", None)  # thinking takes neither (Bedrock answers a ValidationException)
            config.pop("topP", None)
    if config:
        request["inferenceConfig"] = config
    if tool_config := _tool_config(tools or [], wire):
        request["toolConfig"] = tool_config
    if cache:
        _add_cache_points(request, model)
    return request


CACHE_POINT = {"cachePoint": {"type": "default"}}
_CACHING_CLAUDE = re.compile(r"claude-(3-7-|3-5-haiku|(sonnet|opus|haiku)-[4-9])")


def caches_prompts(model: str) -> bool:
    """Whether the model family takes Bedrock `cachePoint` blocks (Claude 3.5 Haiku, 3.7 and 4.x; Nova)."""
    return bool(_CACHING_CLAUDE.search(model)) or "amazon.nova-" in model


def _add_cache_points(request: dict[str, Any], model: str) -> None:
    """A cache point after the system prompt, the tools (Claude only: Nova caches no tools) and the
    last message: each call then reads the prefix the previous one wrote (the transcript only grows,
    so what was the last message is still there, unchanged, in the next call)."""
    if request.get("system"):
        request["system"].append(dict(CACHE_POINT))
    if "toolConfig" in request and "amazon.nova-" not in model:
        request["toolConfig"]["tools"].append(dict(CACHE_POINT))
    if request["messages"]:
        request["messages"][-1]["content"].append(dict(CACHE_POINT))


def can_think_now(wire: list[dict[str, Any]]) -> bool:
    """Claude refuses budgeted thinking when the tool loop in progress began without it: the last assistant
    message, if it called tools, must start with a reasoning block (it may have none because
    thinking was off then, or its state was left out: it came from another model). Then this call
    goes without thinking."""
    last = next((m for m in reversed(wire) if m["role"] == "assistant"), None)
    if last is None or all("toolUse" not in block for block in last["content"]):
        return True
    return "reasoningContent" in last["content"][0]


def _thinking(
    model: str, reasoning: Reasoning, config: dict[str, Any], wire: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Claude's thinking request (the model's own fields); None for a model without thinking (Claude
    before 3.7, Nova, Llama …), a `maxTokens` too small to think in, or a tool loop that began
    without budgeted thinking."""
    match claude_thinking(model):
        case "adaptive":  # the model decides when to think, so any tool loop may go on with it
            return {"thinking": dict(ADAPTIVE_THINKING), "output_config": {"effort": reasoning.effort}}
        case "budget" if can_think_now(wire):
            budget = reasoning.budget_below(int(config.get("maxTokens") or DEFAULT_MAX_TOKENS))
            if budget is None:
                return None
            config.setdefault("maxTokens", DEFAULT_MAX_TOKENS)
            return {"thinking": {"type": "enabled", "budget_tokens": budget}}
        case _:
            return None


def wire_messages(messages: Sequence[NeutralMessage], *, result_status: bool = True) -> list[dict[str, Any]]:
    """Neutral messages → Bedrock messages: alternating roles, no empty blocks, results first;
    `result_status`: whether tool results carry `status` (`takes_result_status`)."""
    names = _DocumentNames()
    merged: list[dict[str, Any]] = []
    for message in messages:
        role = _wire_role(message["role"])
        blocks = [b for part in message["parts"] if (b := _part_block(part, names, result_status)) is not None]
        if role == "assistant":  # (Claude refuses an assistant message that ends with thinking: a stopped answer)
            while blocks and "reasoningContent" in blocks[-1]:
                blocks.pop()
        if not blocks:
            continue
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": role, "content": blocks})
    for wire_message in merged:
        if wire_message["role"] == "user":
            wire_message["content"].sort(key=lambda block: "toolResult" not in block)
    if merged and merged[0]["role"] == "assistant":
        merged.insert(0, {"role": "user", "content": [{"text": PLACEHOLDER_TEXT}]})
    return merged


def _wire_role(role: Role) -> str:
    match role:
        case "user" | "tool":
            return "user"
        case "assistant":
            return "assistant"
        case _:
            raise BackendError(f"Bedrock cannot send a message with role {role!r}.", retryable=False)


def _part_block(part: Part, names: _DocumentNames, with_status: bool = True) -> dict[str, Any] | None:
    """One neutral part → one Bedrock content block (None: nothing to send)."""
    match part["type"]:
        case "text":
            text = part["text"]
            return {"text": text} if text.strip() else None
        case "reasoning":
            return _reasoning_block(part)
        case "tool_use":
            return {
                "toolUse": {"toolUseId": wire_tool_use_id(part["id"]), "name": part["name"], "input": part["input"]}
            }
        case "tool_result":
            return _tool_result_block(part, with_status)
        case "image":
            return _image_block(part)
        case "document":
            return _document_block(part, names)
        case _:
            unknown_part(part, f"Bedrock cannot send a message part of type {part['type']!r}.")


def _reasoning_block(part: ReasoningPart) -> dict[str, Any] | None:
    redacted = (part.get("provider_data") or {}).get("redacted")
    if isinstance(redacted, str) and redacted:
        return {"reasoningContent": {"redactedContent": base64.b64decode(redacted)}}
    signature = part.get("signature")
    if not signature:
        return None
    return {"reasoningContent": {"reasoningText": {"text": part["text"], "signature": signature}}}


def takes_result_status(model: str) -> bool:
    """Whether the model accepts `toolResult.status` (Bedrock: Anthropic Claude models only; others
    answer a ValidationException). Without it an error result still says `{"error": ...}`."""
    return "anthropic." in model or model.startswith("anthropic") or ".claude" in model


def _tool_result_block(part: ToolResultPart, with_status: bool = True) -> dict[str, Any]:
    is_error = part["status"] == "error"
    result = part["result"]
    if isinstance(result, list):
        result = {"items": result}
    elif result is not None and not isinstance(result, dict):
        result = {"value": result}
    if is_error and not result:
        result = {"error": "The tool call failed."}
    block: dict[str, Any] = {"toolUseId": wire_tool_use_id(part["tool_use_id"]), "content": [{"json": result or {}}]}
    if with_status:
        block["status"] = "error" if is_error else "success"
    return {"toolResult": block}


def _image_block(part: ImagePart) -> dict[str, Any]:
    media_type = part["media_type"].lower()
    image_format = IMAGE_FORMATS.get(media_type)
    if image_format is None:
        raise BackendError(f"Bedrock cannot take images of type {media_type!r}.", retryable=False)
    return {"image": {"format": image_format, "source": {"bytes": part["data"]}}}


def _document_block(part: DocumentPart, names: _DocumentNames) -> dict[str, Any]:
    name = part["name"]
    media_type = part["media_type"].lower().split(";")[0].strip()
    extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    doc_format = DOCUMENT_FORMATS.get(media_type) or (extension if extension in _DOCUMENT_EXTENSIONS else None)
    if doc_format is None:
        raise BackendError(f"Bedrock cannot take documents of type {media_type!r}.", retryable=False)
    return {"document": {"format": doc_format, "name": names.unique(name), "source": {"bytes": part["data"]}}}


class _DocumentNames:
    """Bedrock document names: letters, digits, single spaces, hyphens, brackets; unique per request."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def unique(self, name: str) -> str:
        base = sanitize_document_name(name)
        candidate, n = base, 1
        while candidate in self.used:
            n += 1
            candidate = f"{base} ({n})"
        self.used.add(candidate)
        return candidate


def sanitize_document_name(name: str) -> str:
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", name)
    cleaned = re.sub(r"[^A-Za-z0-9\-()\[\] ]", " ", stem)
    cleaned = re.sub(r"\s+", " ", cleaned).strip()[:100].strip()
    return cleaned or "document"


def wire_tool_use_id(value: Any) -> str:
    """Bedrock's toolUseId pattern is `[a-zA-Z0-9_.:-]{1,64}`; other ids get a stable hash."""
    text = str(value or "")
    if _TOOL_USE_ID_RE.fullmatch(text):
        return text
    return "tu_" + hashlib.sha256(text.encode()).hexdigest()[:40]


def _inference_config(inference: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for neutral, wire in (("max_tokens", "maxTokens"), ("temperature", "temperature"), ("top_p", "topP")):
        if inference.get(neutral) is not None:
            config[wire] = inference[neutral]
    stop = inference.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if stop:
        config["stopSequences"] = [s for s in stop if s]
    return config


def _tool_config(tools: Sequence[ToolSpec], wire: list[dict[str, Any]]) -> dict[str, Any] | None:
    specs = [_tool_spec(tool) for tool in tools]
    offered = {tool["name"] for tool in tools}
    used, has_tool_blocks = _history_tools(wire)
    if not specs and not has_tool_blocks:
        return None
    for name in sorted(used - offered):
        specs.append({"toolSpec": {"name": name, "inputSchema": {"json": {"type": "object"}}}})
    return {"tools": specs} if specs else None


def _tool_spec(tool: ToolSpec) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": tool["name"],
        "inputSchema": {"json": tool["input_schema"] or {"type": "object"}},
    }
    if tool["description"]:
        spec["description"] = tool["description"]
    return {"toolSpec": spec}


def _history_tools(wire: list[dict[str, Any]]) -> tuple[set[str], bool]:
    names: set[str] = set()
    has_blocks = False
    for message in wire:
        for block in message["content"]:
            if "toolUse" in block:
                names.add(block["toolUse"]["name"])
            has_blocks = has_blocks or "toolUse" in block or "toolResult" in block
    return names, has_blocks
