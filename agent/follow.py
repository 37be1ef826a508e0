"""Following a turn: from the in-process channel when it runs here, else from the transcript."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from typing import Any

from django.utils import timezone

from agent import hub, turns
from agent.models import Message, Part, Turn
from agent.prepared import Prepared, Slot
from agent.transcript import part_to_neutral, release_connection

HEARTBEAT = ("heartbeat", None)
HEARTBEAT_SECONDS = 15.0
DB_POLL_SECONDS = 0.5

Item = tuple[int | None, str, Any]  # (event id, name, payload)

# A stream following a turn that runs on another worker polls these every DB_POLL_SECONDS
# (agent/prepared.py: compiled once, not per poll).
_NEW_MESSAGES = Prepared(
    lambda: (
        Message.objects.filter(turn=Slot("turn"), position__gt=Slot("after"))
        .exclude(role=Message.USER)
        .order_by("position")
    )
)
_NEW_PARTS = Prepared(
    lambda: (
        Part.objects.filter(message__turn=Slot("turn"), message__position__gt=Slot("after"))
        .exclude(message__role=Message.USER)
        .order_by("message__position", "position")
    )
)


def _replies_after(turn: Turn, position: int) -> tuple[list[Message], dict[int, list[Part]]]:
    """The turn's messages other than the user's past `position`, and their parts by message id."""
    parts: dict[int, list[Part]] = {}
    messages = _NEW_MESSAGES.rows(turn=turn, after=position)
    if messages:
        for part in _NEW_PARTS.rows(turn=turn, after=position):
            parts.setdefault(part.message_id, []).append(part)
    return messages, parts


def replies(turn: Turn) -> list[Message]:
    """The turn's messages other than the user's, in order, each with its parts loaded as
    `prefetch_related("parts")` would load them (`message.parts.all()` asks nothing more): two
    prepared reads, for the HTML stream's end of a turn."""
    messages, parts = _replies_after(turn, -1)
    for message in messages:
        loaded = Part.objects.none()
        loaded._result_cache, loaded._prefetch_done = parts.get(message.pk, []), True
        message._prefetched_objects_cache = {"parts": loaded}
    return messages


_TURN_STATE = Prepared(lambda: Turn.objects.select_related("session").filter(pk=Slot("pk"))[:1])


def follow(turn: Turn, *, last_event_id: int | None = None, heartbeat: float = HEARTBEAT_SECONDS) -> Iterator[Item]:
    """The turn's events to its terminal one, with heartbeats while waiting. Never runs the model."""
    for batch in follow_batches(turn, last_event_id=last_event_id, heartbeat=heartbeat):
        yield from batch


def follow_batches(
    turn: Turn, *, last_event_id: int | None = None, heartbeat: float = HEARTBEAT_SECONDS
) -> Iterator[list[Item]]:
    """`follow` in batches: the events found at one wake-up together, so a stream sends them in one write.

    A follower that falls behind (a busy worker) then catches up in fewer, larger writes.
    """
    channel = hub.get_channel(str(turn.pk))
    pending = channel.take_pending() if channel is not None else None
    if pending is not None:
        yield from _running(channel, pending, last_event_id)
        return
    if channel is not None and not (channel.closed and channel.delivered):
        yield from _from_channel(channel, last_event_id, heartbeat)
        return
    turn.refresh_from_db()
    if turn.finished:
        yield [(None, *_terminal({"terminal_event": turn.terminal_event, "terminal_payload": turn.terminal_payload}))]
        return
    yield from ([item] for item in _from_database(turn, heartbeat))


# Encoding these never touches the database; after any other event (its HTML may be rendered from
# the transcript) the connection is released again before the next wait.
_STREAMED = frozenset(("token", "reasoning"))


def _from_channel(channel: hub.TurnChannel, last_event_id: int | None, heartbeat: float) -> Iterator[list[Item]]:
    seen = 0 if last_event_id is None else last_event_id + 1
    waiter = threading.Event()
    release = True  # the request's session and turn lookups opened a connection
    while True:
        if release:
            release_connection()  # nothing pinned while we wait (NOTES: PostgreSQL has 100 connections)
        if not channel.wait(seen, heartbeat, waiter):
            release = False
            yield [(None, *HEARTBEAT)]
            continue
        events = channel.since(seen)
        batch = [(seen + offset, name, payload) for offset, (name, payload) in enumerate(events)]
        release = any(name not in _STREAMED for name, _ in events)
        seen += len(events)
        if batch:
            yield batch
        if channel.closed and seen >= channel.count():
            channel.delivered = True
            return


def _running(channel: hub.TurnChannel, turn: Turn, last_event_id: int | None) -> Iterator[list[Item]]:
    """Run the turn in this stream's own greenlet, sending what it publishes as it goes.

    Other streams follow it through the channel as usual. If this stream goes away (its
    generator is closed), the turn carries on in a greenlet of its own. While the turn waits in
    silence (the model's first token, a tool) this stream sends no heartbeat; the waits are
    bounded by the model and tool timeouts, and a proxy that cuts the connection sooner only
    makes the browser reconnect and follow the turn through the channel.
    """
    context = contextvars.copy_context()  # the turn's own: it may go on in another greenlet
    steps = turns.drive(turn)
    seen = 0 if last_event_id is None else last_event_id + 1
    done = False
    try:
        while not done:
            done = context.run(next, steps, None) is None
            events = channel.since(seen)
            if events:
                yield [(seen + offset, name, payload) for offset, (name, payload) in enumerate(events)]
                seen += len(events)
        channel.delivered = True
    except GeneratorExit:
        if not done:
            turns.carry_on(context, steps)
        raise


def _from_database(turn: Turn, heartbeat: float) -> Iterator[Item]:
    """Poll the transcript: persisted messages of the turn become events, then its terminal one."""
    last_position, waited = -1, 0.0
    while True:
        messages, parts = _replies_after(turn, last_position)
        for message in messages:
            last_position = message.position
            yield from ((None, name, payload) for name, payload in _message_events(parts.get(message.pk, [])))
        now = _TURN_STATE.first(pk=turn.pk)
        state = None if now is None else _state(now)
        release_connection()
        if state is None or state["status"] != Turn.RUNNING or _abandoned(turn, state):
            yield (None, *_terminal(state if state and state["status"] != Turn.RUNNING else None))
            return
        time.sleep(DB_POLL_SECONDS)
        waited += DB_POLL_SECONDS
        if waited >= heartbeat:
            waited = 0.0
            yield (None, *HEARTBEAT)


def _state(turn: Turn) -> dict[str, Any]:
    return {
        "status": turn.status,
        "terminal_event": turn.terminal_event,
        "terminal_payload": turn.terminal_payload,
        "session__turn_id": turn.session.turn_id,
        "session__lease_until": turn.session.lease_until,
    }


def _message_events(parts: list[Part]) -> Iterator[tuple[str, Any]]:
    """A persisted message (its parts) as the events its turn streamed; a tool message ends with its effects."""
    effects: list[dict[str, Any]] = []
    for part in parts:
        effects += part.effects or []
        p = part_to_neutral(part) if part.type not in ("image", "document") else {"type": part.type}
        match p["type"]:
            case "text":
                yield ("token", {"text": p["text"]})
            case "reasoning":
                if p["text"]:
                    yield ("reasoning", {"text": p["text"]})
            case "tool_use":
                yield ("tool_use", {"id": p["id"], "name": p["name"], "input": p["input"]})
            case "tool_result":
                yield (
                    "tool_result",
                    {"id": p["tool_use_id"], "name": p.get("name", ""), "status": p["status"], "result": p["result"]},
                )
    if effects:
        yield ("effects", effects)


def _terminal(state: dict[str, Any] | None) -> tuple[str, Any]:
    if state and state.get("terminal_event"):
        return state["terminal_event"], state["terminal_payload"]
    from agent.loop import calm_error

    return calm_error("chat_error")


def _abandoned(turn: Turn, state: dict[str, Any]) -> bool:
    """A running turn whose worker died: it no longer holds the session's lease, or the lease ran out."""
    if state["session__turn_id"] != turn.pk:
        return True
    lease = state["session__lease_until"]
    return lease is not None and lease < timezone.now()
