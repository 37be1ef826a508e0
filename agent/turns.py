"""Turns: one at a time per session (a lease in the database), each run apart from any connection.

Accepting a message claims the session's lease and starts the turn in a greenlet of its own (a thread
without gevent). The turn's database work runs in runners (`agent.runners`, greenlets that keep their
connection from one job to the next); while the model streams, the turn holds no connection and no
runner, so a thousand turns waiting on models need only as many connections as do database work at
once. The turn publishes its events to an in-process channel (`hub`); every stream only follows it
there, or from the transcript when it runs on another worker. A closed tab or a stalled reader never
touches the turn.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from datetime import timedelta
from typing import Any, assert_never
from uuid import UUID

from django.db import connection, connections
from django.utils import timezone

from agent import approvals, events, hub, logcontext, notices, runners, sql, watch
from agent.backends.base import Interrupt
from agent.conf import settings
from agent.exceptions import NothingToResume, NothingToRetry, TurnInProgress
from agent.loop import calm_error, retry_helps, run_agent
from agent.models import Message, Session, Turn
from agent.runtime import gevent_patched
from agent.state import TurnRun
from agent.transcript import add_message, release_connection, repair_orphans
from agent.values import TERMINAL, LoopEvent, MediaRefPart, Phase

logger = logcontext.get_logger("agent.turns")


def claim(session: Session, *, resuming: bool = False) -> TurnRun:
    """Take the session's lease with one conditional UPDATE, or raise TurnInProgress.

    A lease whose worker died expires; the new turn then closes the dead one and answers
    its unanswered tool calls so the transcript stays valid. `resuming`: only while calls wait on
    people's decisions (else raise NothingToResume: another request's turn took them up).
    """
    now = timezone.now()
    turn = Turn(session=session, created_at=now)
    sql.insert_turn(turn)
    run = TurnRun(session, turn)
    until = now + timedelta(seconds=settings.AGENT_TURN_LEASE_SECONDS)
    # The usual case: nothing runs and nothing waits for a person; one UPDATE proves both.
    if not resuming and sql.take_lease(session, turn, until, now, awaiting_people=False):
        run.approvals_settled = True
        return run
    if sql.take_lease(session, turn, until, now, awaiting_people=True if resuming else None):
        return run  # nothing was running; calls waiting for a person are settled by the run
    if resuming and not Session.objects.filter(pk=session.pk, awaiting_people=True).exists():
        turn.delete()
        raise NothingToResume()
    lease = {"turn": turn, "lease_until": until, "updated_at": now}
    if not Session.objects.filter(pk=session.pk, lease_until__lt=now).update(**lease):
        turn.delete()
        raise TurnInProgress()
    stale = Turn.objects.filter(session=session, status=Turn.RUNNING).exclude(pk=turn.pk)
    for dead in stale:
        logger.warning("reclaiming turn %s of session %s: its lease expired", dead.pk, session.pk)
        _finish(TurnRun(session, dead), calm_error("chat_error"))
    repair_orphans(run)
    return run


def begin(session: Session, text: str, attachments: Sequence[MediaRefPart] = ()) -> tuple[TurnRun, Message]:
    """Claim the session and add the user's message (its text, then its stored attachments' parts);
    calls still awaiting a person are answered first.

    If that fails, the turn ends as an error and gives the lease back before the failure goes on:
    the chat is not left answering "still answering" until the lease runs out.
    """
    run = claim(session)
    try:
        run.answered = approvals.settle(run)
        message = add_message(run, Message.USER, [{"type": "text", "text": text}, *attachments])
    except BaseException:
        _end_unstarted(run)
        raise
    run.turn.user_message = message  # stored with the turn's end (`_finish`); the message names its turn now
    return run, message


def _end_unstarted(run: TurnRun) -> None:
    """End a turn that failed before it could start (its lease back), whatever state the connection is in."""
    try:
        _finish(run, calm_error("chat_error"))
    except Exception:
        logger.exception("ending turn %s after a failed start failed; its lease runs out instead", run.turn.pk)


def resume(session: Session) -> TurnRun:
    """Claim the session for a turn that carries on after people decided its pending calls.

    Raises NothingToResume when no call waits any more (a request that decided another call at the
    same moment resumed first: its turn answers them all), TurnInProgress while a turn runs."""
    return claim(session, resuming=True)


def retry(session: Session) -> TurnRun:
    """Claim the session for a turn that answers the person again ("Try again") after its latest answer
    failed in a way a retry may clear (`loop.retry_helps`). No message is added: the model reads the
    transcript as it stands, without the unfinished answer the failed call left (`Run.set_aside`), which
    stays in the transcript as it was drawn.

    Raises NothingToRetry when the latest answer did not fail so (another tab tried again first, or a
    message was sent since), TurnInProgress while a turn runs. Asked again once the lease is taken, so two
    presses at once start one answer."""
    if failed_last(session) is None:
        raise NothingToRetry()
    run = claim(session)
    try:
        failed = failed_last(session, besides=run.turn)
        last = Message.objects.filter(session=session).order_by("-position").first()
    except BaseException:
        _end_unstarted(run)  # (as `begin` does: the lease back at once, not when it runs out)
        raise
    if failed is None:
        sql.give_lease_back(session.pk, run.turn)
        run.turn.delete()
        raise NothingToRetry()
    if (
        last is not None
        and last.turn_id == failed.pk
        and last.role == Message.ASSISTANT
        and last.stop_reason == "error"
    ):
        run.set_aside = last.position
    return run


def failed_last(session: Session, *, besides: Turn | None = None) -> Turn | None:
    """The chat's latest turn (other than `besides`) when it ended with an error a retry may clear."""
    turns = Turn.objects.filter(session=session)
    if besides is not None:
        turns = turns.exclude(pk=besides.pk)
    last = turns.order_by("-created_at", "-pk").first()
    return last if last is not None and last.status == Turn.ERROR and retry_helps(last.terminal_payload) else None


def latest(session: Session) -> Turn | None:
    """The session's most recent turn (the one that took up decided calls, after NothingToResume)."""
    return Turn.objects.filter(session=session).order_by("-created_at").first()


def start(run: TurnRun) -> None:
    """Run the turn in a greenlet of its own (a thread without gevent, or with AGENT_TURN_EXECUTOR
    "thread"), its database work in runners (`_in_background`); or inline when configured.

    Its channel opens first, so a stream that arrives a moment later finds it.
    """
    channel = hub.open_channel(str(run.turn.pk))
    channel.session = run.session  # as the request that started it read it (`agent.stream_pass`)
    channel.sink = events.get_bus().open_turn(str(run.turn.pk))  # its events reach other workers too
    notices.turn_started(run.session.pk, run.turn.pk)  # the chat's other open pages follow it too
    mode = settings.AGENT_TURN_EXECUTOR
    if mode == "inline":
        execute(run)
        return
    _watch(channel)
    if mode == "auto" and gevent_patched():
        import gevent

        gevent.spawn(_in_background, run)
    else:
        threading.Thread(target=_in_background, args=(run,), name=f"turn-{run.turn.pk}", daemon=True).start()


def _watch(channel: hub.TurnChannel) -> None:
    """The process's watcher (`agent.watch`) checks the turn's Stop flag and renews its lease from now on."""
    channel.watched = True
    watch.ensure_running()


def _in_background(run: TurnRun) -> None:
    """Drive the turn: from its start, and after each model call's stream, in a runner (it works with
    the database there); each model call's stream here, with no connection (`agent.values.Phase`).

    The turn's events are one generator, resumed by whichever of the two is its turn; it runs in one
    `contextvars.Context` throughout, so what it sets in one part it finds in the next.
    """
    run.marks_phases = True  # (the marks `_until` stops at)
    context = contextvars.Context()
    steps = drive(run)
    try:
        while runners.call(_database_part, context, steps) and context.run(_until, steps, Phase.DATABASE):
            pass
    except Exception:  # (`drive` records a turn's own failures: this is a bug's last stop)
        logger.exception("turn %s of session %s failed", run.turn.pk, run.session.pk)
    finally:
        # A no-op once the turn has ended; else its channel closes, so followers get their end. In the
        # turn's context, where its `finally` blocks reset what they set.
        try:
            context.run(steps.close)
        except (RuntimeError, ValueError):  # (a part still running in a runner: this greenlet was killed)
            logger.exception("turn %s of session %s could not be closed", run.turn.pk, run.session.pk)
        connections.close_all()  # (no part run here uses the database; should one, nothing stays open)


def _database_part(context: contextvars.Context, steps: Iterator[Any]) -> bool:
    """In a runner: the turn up to its next model stream (True) or its end (False); then the runner
    keeps its connection (SQLite) or gives it back to the pool."""
    try:
        return context.run(_until, steps, Phase.MODEL)
    except BaseException:
        connections.close_all()  # (whatever state a failure left them in: the runner's next job opens fresh ones)
        raise
    finally:
        release_connection()


def _until(steps: Iterator[Any], mark: Phase) -> bool:
    """Resume the turn up to `mark`: True there, False once it has ended."""
    for step in steps:
        if step is mark:
            return True
    return False


def execute(run: TurnRun) -> None:
    """Run the loop for a claimed turn here, publishing each event to the turn's channel."""
    for _ in drive(run):
        pass


def drive(run: TurnRun | UUID | str, *, watched: bool = False) -> Generator[LoopEvent | Phase, None, None]:
    """Run a claimed turn (its Run, or the turn's id), yielding and publishing its events; always
    records a terminal event and gives the lease back.

    `watched`: the process's watcher (`agent.watch`) renews the turn's lease and checks its Stop
    flag, as for a turn `start` runs in the background, however long the model or a tool stays
    silent (the terminal). Else both are looked at between the turn's events (`_stop_check`)."""
    if not isinstance(run, TurnRun):
        turn = Turn.objects.select_related("session", "session__user").get(pk=run)
        run = TurnRun(turn.session, turn)
    with logcontext.bind(session_id=run.session.pk, user_id=run.session.user_id, turn_id=run.turn.pk):
        yield from _drive(run, watched)


def _drive(run: TurnRun, watched: bool = False) -> Iterator[LoopEvent | Phase]:
    turn = run.turn
    channel = hub.get_channel(str(turn.pk)) or hub.open_channel(str(turn.pk))
    if watched:
        _watch(channel)
    channel.interrupt = run.interrupt = Interrupt()
    if channel.stop:  # (Stop was pressed before the turn got here: `request_stop` found no Interrupt to fire)
        run.interrupt.fire()
    terminal: LoopEvent | None = None
    try:
        try:
            for step in run_agent(run.session, run=run, should_stop=_stop_check(run, channel)):
                if isinstance(step, Phase):  # (only with `run.marks_phases`: for `_in_background`)
                    yield step
                    continue
                name, payload = step
                channel.publish(name, payload)
                if name in TERMINAL:
                    terminal = step
                yield step
        except Exception:
            logger.exception("turn %s of session %s failed", turn.pk, turn.session_id)
            _with_retries(lambda: repair_orphans(run), "answering orphan tool calls")
        if terminal is None:
            terminal = calm_error("chat_error")
            channel.publish(*terminal)
        ended, terminal_id = terminal, channel.count() - 1  # (the terminal event is the turn's last)
        _with_retries(lambda: _finish(run, ended, terminal_id), "recording the end of the turn")
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
            if attempt + 1 < attempts:  # (after the last try nothing waits on the pause: the channel closes)
                time.sleep(0.5 * (2**attempt))


def _finish(run: TurnRun, terminal: LoopEvent, event_id: int | None = None) -> None:
    """Record the turn's terminal event (and the SSE id it was sent with, when it was sent here) and
    give the session's lease back (if this turn holds it)."""
    turn = run.turn
    match terminal[0]:
        case "done":
            status = Turn.STOPPED if terminal[1].get("stop_reason") == "stopped" else Turn.DONE
        case "error":
            status = Turn.ERROR
        case "confirm":
            status = Turn.PAUSED
        case "token" | "reasoning" | "tool_use" | "tool_result" | "effects":
            status = Turn.DONE  # (never: a turn ends with its terminal event)
        case _:
            assert_never(terminal)
    ended = {
        "status": status,
        "terminal_event": terminal[0],
        "terminal_payload": terminal[1],
        "last_event_id": event_id,
        "finished_at": timezone.now(),
    }
    if turn.user_message_id is not None:
        ended["user_message"] = turn.user_message_id  # one write at the end instead of one more at the start
    sql.end_turn(turn, ended)
    sql.give_lease_back(turn.session_id, turn)


def _stop_check(run: TurnRun, channel: hub.TurnChannel) -> Callable[[], bool]:
    """A cheap `should_stop`: the in-process flag; for turns run inline and not watched (tests,
    evals) also the database flag and the lease renewal now and then, which the watcher does for
    the others."""
    turn = run.turn
    poll = settings.AGENT_STOP_POLL_SECONDS
    renew_every = settings.AGENT_TURN_LEASE_SECONDS / 4
    polled = renewed = time.monotonic()

    def should_stop() -> bool:
        nonlocal polled, renewed
        if channel.stop or channel.watched:  # a watched turn's flag is raised by the process watcher
            return channel.stop
        now = time.monotonic()
        if now - polled < poll:
            return False
        polled = now
        if now - renewed >= renew_every:
            renewed = now
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
        channel.request_stop()
    else:  # it runs on another worker or host: tell it now (the flag above is the record)
        events.get_bus().request_stop(str(turn.pk))
    return True
