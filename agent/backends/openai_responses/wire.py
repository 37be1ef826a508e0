"""Neutral messages and tools -> the Responses API request's `input` items and `tools`.

Each user message is one `message` item of `input_text`, `input_image` and `input_file` parts; the
assistant's text an `output_text` message; each tool call a `function_call` item and each result a
`function_call_output` item, paired by `call_id`. A reasoning part goes back as the reasoning item
this backend received (`provider_data["item"]`, with its `encrypted_content`); reasoning without it
(another backend's or model's, which `transcript.part_for_model` strips) is left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent.backends.base import unknown_part
from agent.backends.openai.wire import b64
from agent.exceptions import BackendError
from agent.values import DocumentPart, NeutralMessage, Part, ReasoningPart, ToolSpec

#: The keys of a reasoning item that go back to the API (as it sent them).
REASONING_ITEM_KEYS = ("type", "id", "summary", "encrypted_content")


def _document(part: DocumentPart) -> dict[str, Any]:
    """A PDF as an `input_file` (OpenAI reads its text and page images); any other document, which
    this engine does not send as a file, as a note naming it, so the model knows one was attached."""
    name, media_type = part["name"] or "document", part["media_type"] or "unknown type"
    if media_type == "application/pdf":
        return {
            "type": "input_file",
            "filename": name,
            "file_data": f"data:application/pdf;base64,{b64(part['data'])}",
        }
    return {"type": "input_text", "text": f"[Attached document {name!r} ({media_type}) cannot be read here.]"}


def _user_part(part: Part) -> dict[str, Any]:
    match part["type"]:
        case "text":
            return {"type": "input_text", "text": part["text"]}
        case "image":
            url = f"data:{part['media_type']};base64,{b64(part['data'])}"
            return {"type": "input_image", "image_url": url}
        case "document":
            return _document(part)
        case "reasoning" | "tool_use" | "tool_result":
            raise BackendError(f"A user message cannot carry a {part['type']!r} part.", retryable=False)
        case _:
            unknown_part(part, f"A user message cannot carry a {part['type']!r} part.")


def _assistant_text(texts: list[str], phase: str | None) -> list[dict[str, Any]]:
    """The assistant's text as one message item (with its `phase` when given); none for no text."""
    text = "".join(texts)
    if not text:
        return []
    item: dict[str, Any] = {"role": "assistant", "content": [{"type": "output_text", "text": text}]}
    if phase:
        item["phase"] = phase
    return [item]


def reasoning_item(part: ReasoningPart) -> dict[str, Any] | None:
    """The reasoning item a reasoning part carries back, or None when it has none."""
    item = (part.get("provider_data") or {}).get("item")
    if not isinstance(item, dict) or item.get("type") != "reasoning":
        return None
    return {key: item[key] for key in REASONING_ITEM_KEYS if key in item}


def _assistant_items(parts: list[Part], *, phases: bool = False) -> list[dict[str, Any]]:
    """One assistant message as items, in the order of its parts: each run of text one `output_text`
    message, each reasoning part its item, each tool call a `function_call`. With `phases`, a text
    message is labelled as the model labelled it: `commentary` when a tool call follows it within
    the answer (a preamble), else `final_answer`."""
    items: list[dict[str, Any]] = []
    texts: list[str] = []
    last_call = max((at for at, part in enumerate(parts) if part["type"] == "tool_use"), default=-1)

    def phase(end: int) -> str | None:  # of the text that ends before part `end`
        return ("commentary" if end <= last_call else "final_answer") if phases else None

    for at, part in enumerate(parts):
        if texts and part["type"] not in ("text", "image", "document"):
            items.extend(_assistant_text(texts, phase(at)))
            texts = []
        match part["type"]:
            case "text":
                texts.append(part["text"])
            case "image" | "document":
                texts.append(f"[{part['type']} omitted]")  # assistant content is text-only
            case "reasoning":
                if (item := reasoning_item(part)) is not None:
                    items.append(item)
            case "tool_use":
                arguments = json.dumps(part["input"] or {}, ensure_ascii=False)
                items.append(
                    {"type": "function_call", "call_id": part["id"], "name": part["name"], "arguments": arguments}
                )
            case "tool_result":
                raise BackendError(f"An assistant message cannot carry a {part['type']!r} part.", retryable=False)
            case _:
                unknown_part(part, f"An assistant message cannot carry a {part['type']!r} part.")
    items += _assistant_text(texts, phase(len(parts)))
    # A reasoning item goes back only with the item it led to: the API refuses one "provided without
    # its required following item". An answer stopped, failed or cut short after its reasoning (its
    # calls dropped: `loop`) ends with one, and sent back as it is, every later call of the chat fails.
    while items and items[-1].get("type") == "reasoning":
        items.pop()
    return items


def _tool_items(parts: list[Part]) -> list[dict[str, Any]]:
    items = []
    for part in parts:
        match part["type"]:
            case "tool_result":
                output = json.dumps(part["result"], ensure_ascii=False, default=str)
                items.append({"type": "function_call_output", "call_id": part["tool_use_id"], "output": output})
            case "text" | "reasoning" | "tool_use" | "image" | "document":
                raise BackendError(f"A tool message cannot carry a {part['type']!r} part.", retryable=False)
            case _:
                unknown_part(part, f"A tool message cannot carry a {part['type']!r} part.")
    return items


def to_input_items(messages: Sequence[NeutralMessage], *, phases: bool = False) -> list[dict[str, Any]]:
    """Neutral history -> the request's `input` (the system prompt goes in `instructions`);
    `phases`: label the assistant's messages with their `phase` (`openai.backend.labels_phases`)."""
    items: list[dict[str, Any]] = []
    for message in messages:
        parts = message["parts"]
        match message["role"]:
            case "user":
                items.append({"role": "user", "content": [_user_part(part) for part in parts]})
            case "assistant":
                items.extend(_assistant_items(parts, phases=phases))
            case "tool":
                items.extend(_tool_items(parts))
            case other:
                raise BackendError(f"Unknown message role {other!r}.", retryable=False)
    return items


def to_function_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as Responses function tools: flat (not nested under `function`), not strict (the
    engine's schemas are not all written for strict mode)."""
    return [
        {
            "type": "function",
            "name": tool["name"],
            "description": tool["description"],
            "parameters": tool["input_schema"] or {"type": "object", "properties": {}},
            "strict": False,
        }
        for tool in tools
    ]
