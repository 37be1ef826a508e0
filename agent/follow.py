"""Following a turn: from the in-process channel when it runs here, else through the event bus
(a copy of its events, `agent.events`), else from the transcript.

A follower never runs the model. It reads what the turn published, sends it, and waits again;
a reader that stalls only stalls its own follower (the channel is an append-only list that the
turn never waits on).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, cast

from django.db.models import Prefetch
from django.utils import timezone

from agent import events, hub
from agent.backfill import Sent
from agent.models import Message, Part, Turn
from agent.streams import Ticket
from agent.transcript import part_to_neutral, release_connection
from agent.values import TERMINAL, LoopEvent, StreamItem, TokenPayload, ToolResultPayload, ToolUsePayload

Item = StreamItem  # (event id, name, payload): the payload's type follows the name

HEARTBEAT: Item = (None, "heartbeat", None)
HEARTBEAT_SECONDS = 15.0
DB_POLL_SECONDS = 0.5
END_ON_ITS_WAY_SECONDS = 2.0  # how long a stream opened after its turn ended waits for its end on the bus


def replies(turn: Turn, after: int = -1) -> list[Message]:
    """The turn's messages other than the user's past position `after`, in order, each with its
    parts (`message.parts.all()` asks nothing more)."""
    return list(
        Message.objects.filter(turn=turn, position__gt=after)
        .exclude(role=Message.USER)
        .order_by("position")
        .prefetch_related(Prefetch("parts", queryset=Part.objects.order_by("position")))
    )


def follow(turn: Turn, *, last_event_id: int | None = None, heartbeat: float = HEARTBEAT_SECONDS) -> Iterator[Item]:
    """The turn's events to its terminal one, with heartbeats while waiting."""
    for batch in follow_batches(turn, last_event_id=last_event_id, heartbeat=heartbeat):
        yield from batch


def follow_batches(
    turn: Turn, *, last_event_id: int | None = None, heartbeat: float = HEARTBEAT_SECONDS, ticket: Ticket | None = None
) -> Iterator[list[Item]]:
    """`follow` in batches: the events found at one wake-up together, so a stream sends them in one write.

    A follower that falls behind (a busy worker) then catches up in fewer, larger writes. Given the
    stream's `ticket` (`agent.streams`), it ends, without a terminal event, once that is superseded.
    """
    channel = hub.get_channel(str(turn.pk))
    # A finished turn re-opened from scratch (a follower here or on another host read it to its end)
    # gets its end at once; one resumed after an id gets what followed it while the channel keeps it,
    # however many readers reached the end before.
    if channel is not None and (last_event_id is not None or not (channel.closed and _was_read(channel))):
        yield from _from_channel(channel, last_event_id, heartbeat, ticket)
        return
    turn.refresh_from_db()
    if turn.finished and last_event_id is None:
        yield from _after_the_end(turn, heartbeat, ticket)
        return
    if _had_its_end(turn, last_event_id):
        return  # resumed at its terminal event: nothing follows it
    bus = events.get_bus()
    copy = bus.follow_turn(str(turn.pk))  # the turn runs on another worker or host, on the bus
    if copy is not None:
        try:
            yield from _from_copy(bus, copy, turn, last_event_id, heartbeat, ticket)
        finally:
            bus.release(copy)
        return
    if turn.finished:
        yield [_end(turn)]
        return
    if last_event_id is not None:
        # Resumed after an id with no copy of the turn's events to resume from (the bus does not
        # answer): what the client had is unknown, so it is sent the end alone rather than words twice
        # (the chat page then shows the whole turn from the transcript).
        yield from ([item] for item in _await_terminal(turn, heartbeat))
        return
    yield from ([item] for item in _from_database(turn, heartbeat, ticket))


def _was_read(channel: hub.TurnChannel) -> bool:
    """Whether a follower read the ended turn of this channel to its end: here, or on another worker
    or host the bus reaches (asked once a stream opens after the end, never per event)."""
    if not channel.delivered and events.get_bus().was_read(channel.turn_id):
        channel.delivered = True
    return channel.delivered


def _read_to_the_end(turn_id: str) -> None:
    """A follower sent the turn's terminal event: a stream opened from scratch later, on any worker
    or host, is opened again and gets the end alone."""
    events.get_bus().mark_read(turn_id)


def _after_the_end(turn: Turn, heartbeat: float, ticket: Ticket | None) -> Iterator[list[Item]]:
    """A stream opened from scratch after its turn ended, its channel not here (another worker or host
    ran the turn, or it lingered past `hub.LINGER_SECONDS`): the whole turn from the bus's copy while
    the bus still holds every event of it and no follower has read it to its end; else its end alone."""
    bus = events.get_bus()
    turn_id = str(turn.pk)
    copy = None if bus.was_read(turn_id) else bus.follow_turn(turn_id)
    if copy is None:
        yield [_end(turn)]
        return
    try:
        # The row says the turn ended; its last events may still be on their way to Redis (the turn's
        # writer sends them a moment after): wait for them a little, as the reader brings them.
        deadline = time.monotonic() + END_ON_ITS_WAY_SECONDS
        waiter = None if ticket is None else ticket.waiter  # (superseding the stream wakes it at once)
        while not copy.closed and (remaining := deadline - time.monotonic()) > 0:
            copy.wait(copy.count(), remaining, waiter, ticket)
            if ticket is not None and ticket.superseded:
                return
        if _whole(copy):
            yield from _from_channel(copy, None, heartbeat, ticket)
        else:
            yield [_end(turn)]  # (the page then draws the turn from the transcript)
    finally:
        bus.release(copy)


def _whole(copy: hub.TurnChannel) -> bool:
    """Whether a copy of an ended turn holds every event of it: it ends with its terminal event, and
    none was lost or trimmed away (a trimmed event is a heartbeat in its place)."""
    return (
        copy.closed
        and not copy.lost
        and copy.count() > 0
        and copy.names[-1] in TERMINAL
        and "heartbeat" not in copy.names
    )


def had_the_end(turn_id: Any, last_event_id: int | None) -> bool:
    """Whether a stream resumed after `last_event_id` already had the turn's terminal event (on any
    worker or host: while the turn's channel is kept here its length says, then the turn's row)."""
    if last_event_id is None:
        return False
    channel = hub.get_channel(str(turn_id))
    if channel is not None:
        return channel.closed and last_event_id >= channel.count() - 1
    turn = Turn.objects.filter(pk=turn_id).only("last_event_id").first()
    return turn is not None and _had_its_end(turn, last_event_id)


def _had_its_end(turn: Turn, last_event_id: int | None) -> bool:
    """Whether `last_event_id` is at or past the turn's terminal event (its row keeps that event's id
    once the turn has ended)."""
    return last_event_id is not None and turn.last_event_id is not None and last_event_id >= turn.last_event_id


# Encoding these never touches the database; after any other event (its HTML may be rendered from
# the transcript) the connection is released again before the next wait.
_STREAMED = frozenset(("token", "reasoning"))


def _from_channel(
    channel: hub.TurnChannel, last_event_id: int | None, heartbeat: float, ticket: Ticket | None = None
) -> Iterator[list[Item]]:
    seen = 0 if last_event_id is None else last_event_id + 1
    waiter = threading.Event() if ticket is None else ticket.waiter
    release = True  # the request's session and turn lookups opened a connection
    while True:
        if release:
            release_connection()  # nothing pinned while we wait
        if ticket is not None and ticket.superseded:  # (also when events keep coming: the wait would not look)
            return
        if not channel.wait(seen, heartbeat, waiter, ticket):
            if ticket is not None and ticket.superseded:
                return
            release = False
            yield [HEARTBEAT]
            continue
        # The channel's two lists hold each event's name and payload in step: read as `Any`, an event
        # is typed as one `Item` again (no cast called per event: this is the per-token path).
        names: list[Any] = channel.names
        payloads: list[Any] = channel.payloads
        end = channel.count()
        if end > seen:
            release = not _STREAMED.issuperset(names[seen:end])
            batch: list[Item] = [(i, names[i], payloads[i]) for i in range(seen, end)]
            seen = end
            yield batch
        else:
            release = False
        if channel.closed and seen >= channel.count():
            if not channel.delivered and not channel.lost:  # (a lost copy's follower goes on from the database)
                channel.delivered = True
                _read_to_the_end(channel.turn_id)
            return


def _from_copy(
    bus: events.EventBus,
    copy: hub.TurnChannel,
    turn: Turn,
    last_event_id: int | None,
    heartbeat: float,
    ticket: Ticket | None = None,
) -> Iterator[list[Item]]:
    """Follow the bus's copy of a turn running elsewhere; end with exactly one terminal event.

    The copy ends with the turn's terminal event. If it stops short (the bus lost the turn: Redis
    went away, or answered `2-0`; or the turn ended without its terminal event reaching the bus:
    its worker died, or Redis came back too late for it), what the turn said after that point, and
    its terminal event, come from the transcript (`agent.backfill`).
    """
    seen = 0 if last_event_id is None else last_event_id + 1
    for batch in _from_channel(copy, last_event_id, heartbeat, ticket):
        if len(batch) == 1 and batch[0][0] is None and not copy.closed:
            # A quiet spell: is the turn still running somewhere?
            now = Turn.objects.select_related("session").filter(pk=turn.pk).first()
            release_connection()
            if now is None or now.status != Turn.RUNNING or abandoned(now):
                bus.catch_up(copy)  # its last events may be on their way: read them now
                if copy.count() <= seen:
                    break  # its end never reached the bus
                continue
        seen = max(seen, max((i for i, _, _ in batch if i is not None), default=seen - 1) + 1)
        yield batch
    had = min(seen, copy.count())
    if (ticket is not None and ticket.superseded) or (had and copy.names[had - 1] in TERMINAL):
        return  # (the end was sent, here or before the stream's Last-Event-ID)
    if copy.count() < seen:
        # Resumed after events this copy never held (it was lost before they reached it): what the
        # client has is unknown, so nothing is sent but the end (rather than words twice).
        yield from ([item] for item in _await_terminal(turn, heartbeat))
        return
    # The client has had every event of the copy, up to `seen` (its own and those before its
    # Last-Event-ID); events the reader adds from now on are not sent from the copy.
    sent = Sent.of(copy.since(0, seen))
    yield from ([item] for item in _from_database(turn, heartbeat, ticket, sent))


def _await_terminal(turn: Turn, heartbeat: float) -> Iterator[Item]:
    """Wait for the turn to end (heartbeats meanwhile) and give its terminal event from the database."""
    waited = 0.0
    while True:
        now = Turn.objects.select_related("session").filter(pk=turn.pk).first()
        release_connection()
        if now is None or now.status != Turn.RUNNING or abandoned(now):
            yield _end(now if now is not None and now.finished else None)
            _read_to_the_end(str(turn.pk))
            return
        time.sleep(DB_POLL_SECONDS)
        waited += DB_POLL_SECONDS
        if waited >= heartbeat:
            waited = 0.0
            yield HEARTBEAT


def _from_database(
    turn: Turn, heartbeat: float, ticket: Ticket | None = None, sent: Sent | None = None
) -> Iterator[Item]:
    """Poll the transcript: persisted messages of the turn become events, then its terminal one.

    Given what the client already `sent` (a copy that stopped short), only what it lacks of them.
    """
    last_position, waited = -1, 0.0
    while True:
        if ticket is not None and ticket.superseded:
            return
        # The status first: a turn found ended had written all its messages, so the replies read next
        # hold its last answer even when it ended between the two reads.
        now = Turn.objects.select_related("session").filter(pk=turn.pk).first()
        for message in replies(turn, last_position):
            last_position = message.position
            said = _message_events(list(message.parts.all()))
            for name, payload in said if sent is None else sent.missing(said):
                yield cast(Item, (None, name, payload))
        release_connection()
        if now is None:
            yield _end(None)
            return
        if now.status != Turn.RUNNING or abandoned(now):
            yield _end(now if now.status != Turn.RUNNING else None)
            _read_to_the_end(str(turn.pk))
            return
        if ticket is None:
            time.sleep(DB_POLL_SECONDS)
        else:
            ticket.waiter.wait(DB_POLL_SECONDS)  # (superseding it wakes it at once)
        waited += DB_POLL_SECONDS
        if waited >= heartbeat:
            waited = 0.0
            yield HEARTBEAT


def _message_events(parts: list[Part]) -> Iterator[LoopEvent]:
    """A persisted message (its parts) as the events its turn streamed; a tool message ends with its effects."""
    effects: list[dict[str, Any]] = []
    for part in parts:
        effects += part.effects or []
        p = part_to_neutral(part) if part.type not in ("image", "document") else {"type": part.type}
        match p["type"]:
            case "text":
                text: TokenPayload = {"text": p["text"]}  # (annotated: mypy infers no TypedDict in a union of tuples)
                yield ("token", text)
            case "reasoning":
                if p["text"]:
                    text = {"text": p["text"]}
                    yield ("reasoning", text)
            case "tool_use":
                call: ToolUsePayload = {"id": p["id"], "name": p["name"], "input": p["input"]}
                yield ("tool_use", call)
            case "tool_result":
                result: ToolResultPayload = {
                    "id": p["tool_use_id"],
                    "name": p.get("name", ""),
                    "status": p["status"],
                    "result": p["result"],
                }
                yield ("tool_result", result)
    if effects:
        yield ("effects", effects)


def _end(turn: Turn | None) -> Item:
    """The turn's terminal event as an item, with the id it was first sent with when that is known."""
    return cast(Item, (turn.last_event_id if turn is not None else None, *_terminal(turn)))


def _terminal(turn: Turn | None) -> LoopEvent:
    if turn is not None and turn.terminal_event:
        # (The row holds the terminal event the turn sent, as `turns._finish` wrote it.)
        return cast(LoopEvent, (turn.terminal_event, turn.terminal_payload))
    from agent.loop import calm_error

    return calm_error("chat_error")


def abandoned(turn: Turn) -> bool:
    """A running turn whose worker died: it no longer holds the session's lease, or the lease ran out."""
    if turn.session.turn_id != turn.pk:
        return True
    lease = turn.session.lease_until
    return lease is not None and lease < timezone.now()
