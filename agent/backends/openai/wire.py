"""Neutral messages and tools -> the chat/completions request's `messages` and `tools`."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from agent.backends.base import unknown_part
from agent.exceptions import BackendError
from agent.values import DocumentPart, NeutralMessage, Part, ToolSpec, ToolUsePart


def b64(data: bytes) -> str:
    """Attachment bytes as base64 text."""
    return base64.b64encode(data).decode("ascii")


#: The most text of one PDF sent to a model that cannot take the file itself.
PDF_TEXT_LIMIT = 200_000


def _document(part: DocumentPart, *, pdf_files: bool) -> dict[str, Any]:
    """A document for chat/completions: a PDF as a `file` part where the server takes files
    (`pdf_files`), else its text, extracted, with a note saying so; any other document by name."""
    name, media_type = part["name"] or "document", part["media_type"] or "unknown type"
    if media_type == "application/pdf":
        data = part["data"]
        if pdf_files:
            return {
                "type": "file",
                "file": {"filename": name, "file_data": f"data:application/pdf;base64,{b64(data)}"},
            }
        from agent.attachments import pdf_text

        text = pdf_text(data, PDF_TEXT_LIMIT)
        if text is None:
            return {"type": "text", "text": f"[Attached PDF {name!r}: no text could be read from it.]"}
        note = f"[Attached PDF {name!r}: its text, extracted (layout, images and tables may be lost).]"
        return {"type": "text", "text": f"{note}\n\n{text}"}
    # chat/completions has no generic document part, so the model is told a document was
    # attached (by name and type) rather than the request failing.
    return {"type": "text", "text": f"[Attached document {name!r} ({media_type}) cannot be read here.]"}


def _user_part(part: Part, *, pdf_files: bool = False) -> dict[str, Any]:
    match part["type"]:
        case "text":
            return {"type": "text", "text": part["text"]}
        case "image":
            url = f"data:{part['media_type']};base64,{b64(part['data'])}"
            return {"type": "image_url", "image_url": {"url": url}}
        case "document":
            return _document(part, pdf_files=pdf_files)
        case "reasoning" | "tool_use" | "tool_result":
            raise BackendError(f"A user message cannot carry a {part['type']!r} part.", retryable=False)
        case _:
            unknown_part(part, f"A user message cannot carry a {part['type']!r} part.")


def _user_message(parts: list[Part], *, pdf_files: bool = False) -> dict[str, Any]:
    wire = [_user_part(part, pdf_files=pdf_files) for part in parts]
    if all(item["type"] == "text" for item in wire):
        return {"role": "user", "content": "\n".join(item["text"] for item in wire)}
    return {"role": "user", "content": wire}


def _assistant_message(parts: list[Part], *, this_turn: bool) -> dict[str, Any]:
    """One assistant message; the provider state of its parts goes back where the server wants it:
    Gemini's `extra_content` on its tool call, OpenRouter's `reasoning_details` on the message, and
    DeepSeek's `reasoning_content` within the current turn (`this_turn`: after the last user message;
    DeepSeek ignores it for earlier turns). Reasoning without state is not sent back."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    reasoning: list[str] = []
    details: list[Any] = []
    for part in parts:
        match part["type"]:
            case "text":
                texts.append(part["text"])
            case "reasoning":
                state = part.get("provider_data") or {}
                if state.get("field") == "reasoning_content" and this_turn:
                    reasoning.append(part["text"])
                details.extend(state.get("reasoning_details") or [])
            case "tool_use":
                calls.append(_tool_call(part))
            case "image" | "document":
                texts.append(f"[{part['type']} omitted]")  # assistant content is text-only on this API
            case "tool_result":
                raise BackendError(f"An assistant message cannot carry a {part['type']!r} part.", retryable=False)
            case _:
                unknown_part(part, f"An assistant message cannot carry a {part['type']!r} part.")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if details:
        message["reasoning_details"] = details
    return message


def _tool_call(part: ToolUsePart) -> dict[str, Any]:
    arguments = json.dumps(part["input"] or {}, ensure_ascii=False)
    call: dict[str, Any] = {
        "id": part["id"],
        "type": "function",
        "function": {"name": part["name"], "arguments": arguments},
    }
    extra = (part.get("provider_data") or {}).get("extra_content")
    if isinstance(extra, dict):
        call["extra_content"] = extra
    return call


def _tool_messages(parts: list[Part]) -> list[dict[str, Any]]:
    messages = []
    for part in parts:
        match part["type"]:
            case "tool_result":
                content = json.dumps(part["result"], ensure_ascii=False, default=str)
                messages.append({"role": "tool", "tool_call_id": part["tool_use_id"], "content": content})
            case "text" | "reasoning" | "tool_use" | "image" | "document":
                raise BackendError(f"A tool message cannot carry a {part['type']!r} part.", retryable=False)
            case _:
                unknown_part(part, f"A tool message cannot carry a {part['type']!r} part.")
    return messages


def to_wire_messages(
    system: str, messages: Sequence[NeutralMessage], *, pdf_files: bool = False
) -> list[dict[str, Any]]:
    """Neutral history -> chat/completions `messages`, the system prompt first. PDFs go as `file`
    parts when `pdf_files` (the server takes them), else as their extracted text."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    for position, message in enumerate(messages):
        parts = message["parts"]
        match message["role"]:
            case "user":
                wire.append(_user_message(parts, pdf_files=pdf_files))
            case "assistant":
                wire.append(_assistant_message(parts, this_turn=position > last_user))
            case "tool":
                wire.extend(_tool_messages(parts))
            case other:
                raise BackendError(f"Unknown message role {other!r}.", retryable=False)
    return wire


def to_wire_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool["description"],
                "parameters": tool["input_schema"] or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
    ]
