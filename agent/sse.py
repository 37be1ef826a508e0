"""Server-sent events: the one place that knows the wire. Engine tuples in, bytes out.

Typed values in (`agent.values`: `StreamItem`, its payload's type following its name), the same bytes
out whatever the types say: a type is a promise to mypy, never a check made per event.
"""

from __future__ import annotations

import json
import re
from html import escape as escape_text
from typing import Any

from agent.values import ErrorPayload, EventName, Payload, StreamItem, unknown_kind

HEARTBEAT_BYTES = b": keep-alive\n\n"


LINE_BREAK = re.compile(r"\r\n|\r|\n")  # SSE ends a line at any of the three


def _data_lines(data: str) -> str:
    # One `data:` line per line: no line break inside the data can start a new field or event.
    return "".join(f"data: {line}\n" for line in LINE_BREAK.split(data))


def encode(name: str, data: str, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    # Most data (a token's text) is one line: no split for it.
    lines = _data_lines(data) if "\n" in data or "\r" in data else f"data: {data}\n"
    # A lone surrogate must not break the stream: it becomes "?".
    return f"{head}event: {name}\n{lines}\n".encode("utf-8", "replace")


# One encoder for every event: `json.dumps` with these arguments builds a new one per call.
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def encode_json(name: EventName, payload: Payload, event_id: int | None = None) -> bytes:
    """The JSON flavour: `event: <name>` and one line of JSON (json.dumps never emits a raw newline)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    # What `encode` writes for data without line breaks, without its split.
    return f"{head}event: {name}\ndata: {_dumps(payload)}\n\n".encode("utf-8", "replace")


# --- The HTML flavour: the same tuples as fragments the page swaps in (htmx SSE extension) ---


def encode_html(item: StreamItem, turn: Any) -> bytes:
    """One engine tuple, (SSE id, name, payload), as the HTML events the chat panel listens for;
    terminal tuples add `end`."""
    from django.template.loader import render_to_string

    from agent import display

    event_id = item[0]
    match item[1]:  # (on the tuple's name, so the tuple, its payload too, is narrowed in each case)
        case "token" | "reasoning":
            html = escape_text(item[2]["text"])  # what django.utils.html.escape returns, as a plain str
        case "tool_use":
            payload = item[2]
            [summary] = display.summaries(turn.session, [(payload["name"], payload.get("input"))])
            chip = display.chip(payload["id"], payload["name"], "running", summary)
            html = render_to_string("agent/_chip.html", {"chip": chip})
        case "tool_result":
            result = item[2]
            chip = display.chip(
                result["id"], result["name"], display.shown_status(result["status"], result.get("result"))
            )
            html = render_to_string("agent/_chip_status.html", {"chip": chip})
            if display.lapsed(result.get("result")):  # its card, if the page still shows one, says so
                html += render_to_string("agent/_lapsed.html", {"chip": chip})
        case "effects":
            return encode("effects", json.dumps(item[2], separators=(",", ":")), event_id)
        case "done" | "confirm":
            html = render_to_string("agent/_turn_final.html", _final_context(item[1], None, turn))
            return encode(item[1], html, event_id) + encode("end", "end")
        case "error":
            html = render_to_string("agent/_turn_final.html", _final_context(item[1], item[2], turn))
            return encode(item[1], html, event_id) + encode("end", "end")
        case "heartbeat":
            return HEARTBEAT_BYTES
        case _:
            unknown_kind(item)  # (sent nothing, as the page would not know it either)
            return b""
    return encode(item[1], html, event_id)


def _final_context(name: EventName, error: ErrorPayload | None, turn: Any) -> dict[str, Any]:
    from agent import budget, display
    from agent.follow import replies
    from agent.loop import retry_helps

    messages = replies(turn)
    meter = budget.meter(turn.session.user)
    return {
        "turn_id": turn.pk,
        "session_id": turn.session_id,
        "approvals": display.approvals_for(turn) if name == "confirm" else [],
        "blocks": display.turn_blocks(messages, display.turn_result_statuses(messages, turn.session_id), turn.session),
        "error": (
            {**error, "retry_after_seconds": display.retry_left(turn, error), "try_again": retry_helps(error)}
            if error is not None
            else None
        ),
        "meter": display.meter_display(meter),
    }
