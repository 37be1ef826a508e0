"""Neutral messages and tools -> the chat/completions request's `messages` and `tools`."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from agent.exceptions import BackendError


def b64(data: Any) -> str:
    """Attachment bytes (or text already in base64) as base64 text."""
    if isinstance(data, str):
        return data  # already base64
    return base64.b64encode(bytes(data)).decode("ascii")


#: The most text of one PDF sent to a model that cannot take the file itself.
PDF_TEXT_LIMIT = 200_000


def _document(part: dict[str, Any], *, pdf_files: bool) -> dict[str, Any]:
    """A document for chat/completions: a PDF as a `file` part where the server takes files
    (`pdf_files`), else its text, extracted, with a note saying so; any other document by name."""
    name, media_type = part.get("name") or "document", part.get("media_type") or "unknown type"
    if media_type == "application/pdf":
        data = part.get("data", b"")
        if pdf_files:
            return {
                "type": "file",
                "file": {"filename": name, "file_data": f"data:application/pdf;base64,{b64(data)}"},
            }
        from agent.attachments import pdf_text

        text = pdf_text(base64.b64decode(data) if isinstance(data, str) else bytes(data), PDF_TEXT_LIMIT)
        if text is None:
            return {"type": "text", "text": f"[Attached PDF {name!r}: no text could be read from it.]"}
        note = f"[Attached PDF {name!r}: its text, extracted (layout, images and tables may be lost).]"
        return {"type": "text", "text": f"{note}\n\n{text}"}
    # chat/completions has no generic document part, so the model is told a document was
    # attached (by name and type) rather than the request failing.
    return {"type": "text", "text": f"[Attached document {name!r} ({media_type}) cannot be read here.]"}


def _user_part(part: dict[str, Any], *, pdf_files: bool = False) -> dict[str, Any]:
    match part.get("type"):
        case "text":
            return {"type": "text", "text": part.get("text", "")}
        case "image":
            url = f"data:{part.get('media_type', 'image/png')};base64,{b64(part.get('data', b''))}"
            return {"type": "image_url", "image_url": {"url": url}}
        case "document":
            return _document(part, pdf_files=pdf_files)
        case other:
            raise BackendError(f"A user message cannot carry a {other!r} part.", retryable=False)


def _user_message(parts: list[dict[str, Any]], *, pdf_files: bool = False) -> dict[str, Any]:
    wire = [_user_part(part, pdf_files=pdf_files) for part in parts]
    if all(item["type"] == "text" for item in wire):
        return {"role": "user", "content": "\n".join(item["text"] for item in wire)}
    return {"role": "user", "content": wire}


def _assistant_message(parts: list[dict[str, Any]], *, this_turn: bool) -> dict[str, Any]:
    """One assistant message; the provider state of its parts goes back where the server wants it:
    Gemini's `extra_content` on its tool call, OpenRouter's `reasoning_details` on the message, and
    DeepSeek's `reasoning_content` within the current turn (`this_turn`: after the last user message;
    DeepSeek ignores it for earlier turns). Reasoning without state is not sent back."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    reasoning: list[str] = []
    details: list[Any] = []
    for part in parts:
        match part.get("type"):
            case "text":
                texts.append(part.get("text", ""))
            case "reasoning":
                state = part.get("provider_data") or {}
                if state.get("field") == "reasoning_content" and this_turn:
                    reasoning.append(part.get("text", ""))
                details.extend(state.get("reasoning_details") or [])
            case "tool_use":
                calls.append(_tool_call(part))
            case "image" | "document":
                texts.append(f"[{part['type']} omitted]")  # assistant content is text-only on this API
            case other:
                raise BackendError(f"An assistant message cannot carry a {other!r} part.", retryable=False)
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if details:
        message["reasoning_details"] = details
    return message


def _tool_call(part: dict[str, Any]) -> dict[str, Any]:
    arguments = json.dumps(part.get("input") or {}, ensure_ascii=False)
    call = {"id": part["id"], "type": "function", "function": {"name": part["name"], "arguments": arguments}}
    extra = (part.get("provider_data") or {}).get("extra_content")
    if isinstance(extra, dict):
        call["extra_content"] = extra
    return call


def _tool_messages(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    messages = []
    for part in parts:
        match part.get("type"):
            case "tool_result":
                content = json.dumps(part.get("result", {}), ensure_ascii=False, default=str)
                messages.append({"role": "tool", "tool_call_id": part["tool_use_id"], "content": content})
            case other:
                raise BackendError(f"A tool message cannot carry a {other!r} part.", retryable=False)
    return messages


def to_wire_messages(
    system: str, messages: Sequence[Mapping[str, Any]], *, pdf_files: bool = False
) -> list[dict[str, Any]]:
    """Neutral history -> chat/completions `messages`, the system prompt first. PDFs go as `file`
    parts when `pdf_files` (the server takes them), else as their extracted text."""
    wire: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    for position, message in enumerate(messages):
        parts = message.get("parts") or []
        match message.get("role"):
            case "user":
                wire.append(_user_message(parts, pdf_files=pdf_files))
            case "assistant":
                wire.append(_assistant_message(parts, this_turn=position > last_user))
            case "tool":
                wire.extend(_tool_messages(parts))
            case other:
                raise BackendError(f"Unknown message role {other!r}.", retryable=False)
    return wire


def to_wire_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool.get("description", ""),
                "parameters": tool.get("input_schema") or {"type": "object", "properties": {}},
            },
        }
        for tool in tools
    ]
