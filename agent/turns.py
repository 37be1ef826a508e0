"""Turns: one at a time per session (a lease in the database), run apart from any connection."""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, connections
from django.utils import timezone

from agent import approvals, hub, logcontext, watch
from agent.exceptions import TurnInProgress
from agent.loop import calm_error, run_agent
from agent.models import Message, Session, Turn
from agent.prepared import Prepared, Slot, insert
from agent.runtime import gevent_patched
from agent.transcript import add_message, release_connection, repair_orphans

logger = logging.getLogger("agent.turns")

TERMINAL = ("done", "error", "confirm")

# The writes every turn makes at its start and end (agent/prepared.py: compiled once, not per write).
# The lease is taken at once when nothing runs, nothing waits for a person and the transcript ends
# where the loaded session says (see `claim`).
_TAKE_IF_CURRENT = Prepared(
    lambda: Session.objects.filter(pk=Slot("pk"), turn__isnull=True, awaiting_people=False, next_position=Slot("end"))
)
_TAKE_IF_CLEAR_END_UNKNOWN = Prepared(
    lambda: Session.objects.filter(pk=Slot("pk"), turn__isnull=True, awaiting_people=False, next_position__isnull=True)
)
_TURN = Prepared(lambda: Turn.objects.filter(pk=Slot("pk")))
_LEASE_HELD_BY = Prepared(lambda: Session.objects.filter(pk=Slot("pk"), turn=Slot("turn")))


def claim(session: Session) -> Turn:
    """Take the session's lease with one conditional UPDATE, or raise TurnInProgress.

    A lease whose worker died expires; the new turn then closes the dead one and answers
    its unanswered tool calls so the transcript stays valid.
    """
    now = timezone.now()
    turn = Turn(session=session)
    insert(turn)
    lease = {"turn": turn, "lease_until": now + timedelta(seconds=settings.AGENT_TURN_LEASE_SECONDS), "updated_at": now}
    # The usual case: nothing was running, nothing waits for a person, and the transcript ends where
    # this session object says (nobody added a message since it was loaded). One UPDATE proves all three.
    known_end = getattr(session, "next_position", None)
    if known_end is not None:
        current = bool(_TAKE_IF_CURRENT.update(lease, pk=session.pk, end=known_end))
    else:
        current = bool(_TAKE_IF_CLEAR_END_UNKNOWN.update(lease, pk=session.pk))
    session.approvals_settled = current
    # Else ask the database where the transcript ends.
    session._next_message_position = known_end if current else None
    if current or Session.objects.filter(pk=session.pk, turn__isnull=True).update(**lease):
        return turn  # nothing was running, so nothing to reclaim
    if not Session.objects.filter(pk=session.pk, lease_until__lt=now).update(**lease):
        turn.delete()
        raise TurnInProgress()
    stale = Turn.objects.filter(session=session, status=Turn.RUNNING).exclude(pk=turn.pk)
    for dead in stale:
        logger.warning("reclaiming turn %s of session %s: its lease expired", dead.pk, session.pk)
        _finish(dead, "error", dict(calm_error("chat_error")[1]))
    if stale:
        repair_orphans(session, turn=turn)
    return turn


def begin(session: Session, text: str) -> tuple[Turn, Message]:
    """Claim the session and add the user's message; calls still awaiting a person are answered first."""
    turn = claim(session)
    approvals.settle(session, turn)
    message = add_message(session, Message.USER, [{"type": "text", "text": text}], turn=turn)
    turn.user_message = message  # stored with the turn's end (`_finish`); the message names its turn now
    return turn, message


def resume(session: Session) -> Turn:
    """Claim the session for a turn that carries on after people decided its pending calls."""
    return claim(session)


def start(turn: Turn) -> None:
    """Run the turn in its own greenlet (or thread), or inline when configured.

    Under gevent the stream that follows a new turn usually arrives on this worker within
    milliseconds. It then runs the turn itself (`follow_batches`): one greenlet reads the model
    and writes the response, instead of a turn greenlet that publishes and a stream greenlet that
    wakes for every token (~19% less CPU per turn at a thousand streams, BENCHMARKS.md). A turn
    no stream of this worker takes within `AGENT_ADOPT_SECONDS` starts on its own, as does every
    turn when that is 0.
    """
    mode = settings.AGENT_TURN_EXECUTOR
    channel = hub.open_channel(str(turn.pk))
    if mode == "inline":
        execute(turn)
        return
    channel.watched = True
    watch.ensure_running()
    if mode == "auto" and gevent_patched():
        import gevent

        if settings.AGENT_ADOPT_SECONDS > 0:
            channel.pending = turn
            gevent.spawn_later(settings.AGENT_ADOPT_SECONDS, _unless_adopted, channel)
        else:
            gevent.spawn(_in_background, turn)
    else:
        threading.Thread(target=_in_background, args=(turn,), daemon=True).start()


def _unless_adopted(channel: hub.TurnChannel) -> None:
    turn = channel.take_pending()
    if turn is not None:
        _in_background(turn)


def _in_background(turn: Turn | Any) -> None:
    try:
        execute(turn)
    finally:
        connections.close_all()


def carry_on(context: contextvars.Context, steps: Iterator[Any]) -> None:
    """Run the rest of a turn whose stream went away (it was running the turn) in its own greenlet
    or thread: a browser disconnect never ends a turn. `context` is the one the turn ran in, so its
    context variables (log fields, the model call's context) reset where they were set."""

    def rest() -> None:
        try:
            for _ in iter(lambda: context.run(next, steps, None), None):
                pass
        except Exception:
            logger.exception("carrying on a turn after its stream went away failed")
        finally:
            connections.close_all()

    if gevent_patched():
        import gevent

        gevent.spawn(rest)
    else:
        threading.Thread(target=rest, daemon=True).start()


def execute(turn: Turn | Any) -> None:
    """Run the loop for a claimed turn, publishing each event to the turn's channel."""
    for _ in drive(turn):
        pass


def drive(turn: Turn | Any) -> Iterator[tuple[str, Any]]:
    """Run a claimed turn (a Turn, or its id), yielding and publishing its events; always records a
    terminal and releases. A Turn passed in keeps its session object, and what the request already
    loaded with it (user, blog link, next message position)."""
    if not isinstance(turn, Turn):
        turn = Turn.objects.select_related("session", "session__user").get(pk=turn)
    with logcontext.bind(session_id=turn.session_id, user_id=turn.session.user_id, turn_id=turn.pk):
        yield from _drive(turn)


def _drive(turn: Turn) -> Iterator[tuple[str, Any]]:
    channel = hub.get_channel(str(turn.pk)) or hub.open_channel(str(turn.pk))
    terminal: tuple[str, Any] | None = None
    try:
        try:
            for name, payload in run_agent(turn.session, turn=turn, should_stop=_stop_check(turn, channel)):
                channel.publish(name, payload)
                if name in TERMINAL:
                    terminal = (name, payload)
                yield name, payload
        except Exception:
            logger.exception("turn %s of session %s failed", turn.pk, turn.session_id)
            _with_retries(lambda: repair_orphans(turn.session, turn=turn), "answering orphan tool calls")
        if terminal is None:
            terminal = calm_error("chat_error")
            channel.publish(*terminal)
        _with_retries(lambda: _finish(turn, *terminal), "recording the end of the turn")
    finally:
        channel.close()  # whatever happened, followers get their end
    if terminal[0] == "error" and terminal[1].get("code") == "chat_error":
        yield terminal


def _with_retries(action: Callable[[], Any], what: str, attempts: int = 3) -> None:
    """Writes after a failure may meet a broken connection: drop it and try again a few times.

    If all attempts fail the lease still expires, and the next turn closes this one and answers
    its tool calls.
    """
    for attempt in range(attempts):
        try:
            action()
            return
        except Exception:
            logger.exception("%s failed (attempt %d of %d)", what, attempt + 1, attempts)
            connection.close()
            time.sleep(0.5 * (2**attempt))


def _finish(turn: Turn, name: str, payload: Any) -> None:
    if name == "done":
        status = Turn.STOPPED if payload.get("stop_reason") == "stopped" else Turn.DONE
    else:
        status = {"error": Turn.ERROR, "confirm": Turn.PAUSED}.get(name, Turn.DONE)
    ended = {"status": status, "terminal_event": name, "terminal_payload": payload, "finished_at": timezone.now()}
    if turn.user_message_id is not None:
        ended["user_message_id"] = turn.user_message_id  # one write at the end instead of one more at the start
    _TURN.update(ended, pk=turn.pk)
    # Where the transcript ends, if this turn's session object knows (None after a failed write: ask).
    session = turn.session if Turn.session.is_cached(turn) else None
    end = getattr(session, "_next_message_position", None)
    _LEASE_HELD_BY.update({"turn": None, "lease_until": None, "next_position": end}, pk=turn.session_id, turn=turn)
    if session is not None:
        session.next_position = end


def _stop_check(turn: Turn, channel: hub.TurnChannel) -> Callable[[], bool]:
    """A cheap `should_stop`: the in-process flag; for turns run inline (terminal, evals) also the
    database flag and the lease renewal now and then, which the watcher does for background turns."""
    poll = settings.AGENT_STOP_POLL_SECONDS
    renew_every = settings.AGENT_TURN_LEASE_SECONDS / 4
    state = {"polled": time.monotonic(), "renewed": time.monotonic()}

    def should_stop() -> bool:
        if channel.stop or channel.watched:  # a watched turn's flag is raised by the process watcher
            return channel.stop
        now = time.monotonic()
        if now - state["polled"] < poll:
            return False
        state["polled"] = now
        if now - state["renewed"] >= renew_every:
            state["renewed"] = now
            Session.objects.filter(pk=turn.session_id, turn=turn).update(
                lease_until=timezone.now() + timedelta(seconds=settings.AGENT_TURN_LEASE_SECONDS)
            )
        channel.stop = Turn.objects.filter(pk=turn.pk, stop_requested=True).exists()
        release_connection()
        return channel.stop

    return should_stop


def request_stop(session: Session) -> bool:
    """Ask the running turn to stop; False when no turn is running."""
    turn = Turn.objects.filter(session=session, status=Turn.RUNNING).order_by("-created_at").first()
    if turn is None or not Turn.objects.filter(pk=turn.pk, status=Turn.RUNNING).update(stop_requested=True):
        return False
    channel = hub.get_channel(str(turn.pk))
    if channel is not None:
        channel.stop = True
    return True
