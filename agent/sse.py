"""Server-sent events: the one place that knows the wire. Engine tuples in, bytes out."""

from __future__ import annotations

import json
from typing import Any

HEARTBEAT_BYTES = b": keep-alive\n\n"


def _data_lines(data: str) -> str:
    # One `data:` line per line: a newline inside the data can never start a new field or event.
    return "".join(f"data: {line}\n" for line in data.split("\n"))


def encode(name: str, data: str, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {name}\n{_data_lines(data)}\n".encode()


def encode_json(name: str, payload: Any, event_id: int | None = None) -> bytes:
    """The JSON flavour: `event: <name>` and one line of JSON (json.dumps never emits a raw newline)."""
    return encode(name, json.dumps(payload, separators=(",", ":"), ensure_ascii=False), event_id)
