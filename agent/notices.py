"""A chat's own notices: its other open pages (the same person's other tabs and devices) learn that
a turn started or a call was decided there, and draw it without a reload.

One message per event of the chat, never per token: `{"turn": "<turn id>"}` when a turn starts (a
message sent, calls decided and the answer resumed), `{"approval": "<approval id>"}` when a person
decides a call. They go on the bus channel `chat:<session id>` once the change is committed; the
domain's page stream listens to it for the chat's own user only, and a page fetches what the notice
names through the chat's own views, which check the user as every view does. A notice carries ids,
never text.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agent import events


def channel_name(session_id: Any) -> str:
    return f"chat:{session_id}"


def turn_started(session_id: Any, turn_id: Any) -> None:
    _send(session_id, {"turn": str(turn_id)})


def approval_decided(session_id: Any, approval_id: Any) -> None:
    _send(session_id, {"approval": str(approval_id)})


def _send(session_id: Any, notice: dict[str, str]) -> None:
    """Once the change is committed (at once outside a transaction); never raises (`events.publish`)."""
    name = channel_name(session_id)
    transaction.on_commit(lambda: events.publish(name, notice))
