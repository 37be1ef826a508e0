"""A background turn holds no database connection while its model streams: its database work runs in
runners (`agent.runners`), its model calls' streams in the turn's own thread (greenlet when served)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections
from django.db.backends.signals import connection_created

from agent import hub, runners, turns
from agent.models import Message, Turn
from agent.state import Run
from agent.values import Phase

DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}


class HeldBackend:
    """A model that answers once the test lets it, recording the thread each stream runs in."""

    name = "held"
    default_model = "held-1"
    uses_call_index = False
    entered: dict[str, threading.Event] = {}
    release = threading.Event()
    threads: dict[str, int] = {}

    def stream(self, *, system: str, messages: list[dict[str, Any]], **kwargs: Any):
        said = messages[-1]["parts"][0]["text"]
        HeldBackend.threads[said] = threading.get_ident()
        HeldBackend.entered[said].set()
        assert HeldBackend.release.wait(10)
        yield {"kind": "text", "text": f"re {said}"}
        yield DONE


@pytest.fixture
def held(settings):
    settings.AGENT_BACKEND_CLASSES = {"held": f"{__name__}.HeldBackend"}
    settings.AGENT_BACKEND = "held"
    settings.AGENT_MODEL = ""
    settings.AGENT_TURN_EXECUTOR = "thread"
    HeldBackend.entered = {"one": threading.Event(), "two": threading.Event()}
    HeldBackend.release = threading.Event()
    HeldBackend.threads = {}
    yield HeldBackend
    HeldBackend.release.set()


@pytest.mark.django_db(transaction=True)
def test_turns_waiting_on_their_models_hold_no_connection_and_share_one_runner(user, held, fresh_runners):
    from agent.models import Session

    opened: list[int] = []  # the threads that opened a connection, but the process's lease watcher

    def note(sender: Any, connection: Any, **kwargs: Any) -> None:
        if threading.current_thread().name != "agent-watch":
            opened.append(threading.get_ident())

    chats = [Session.objects.create(user=user) for _ in range(2)]
    connection_created.connect(note)
    try:
        started = []
        for chat, said in zip(chats, ("one", "two"), strict=True):
            run, _ = turns.begin(chat, said)
            turns.start(run)
            started.append(run.turn)
            assert held.entered[said].wait(10)  # its model is streaming (and holds it there)
            for _ in range(100):  # the runner that did its database work waits for the next
                if runners.idle_count() == 1:
                    break
                threading.Event().wait(0.02)
            assert runners.idle_count() == 1
        # Both models stream at once; one runner did both turns' database work so far.
        assert len(set(opened) - {threading.get_ident()}) == 1
        held.release.set()
        for turn in started:
            channel = hub.get_channel(str(turn.pk))
            assert channel.wait(0, 10) and _closed(channel)
    finally:
        connection_created.disconnect(note)
    main = threading.get_ident()
    model_threads = set(held.threads.values())
    assert len(model_threads) == 2 and main not in model_threads
    assert not model_threads & set(opened)  # no model's thread ever opened a connection
    for turn, said in zip(started, ("one", "two"), strict=True):
        turn.refresh_from_db()
        assert turn.status == Turn.DONE and turn.terminal_event == "done"
        answer = Message.objects.get(turn=turn, role=Message.ASSISTANT)
        assert [p.text for p in answer.parts.all()] == [f"re {said}"]
    connections.close_all()


def _closed(channel: hub.TurnChannel) -> bool:
    for _ in range(500):
        if channel.closed:
            return True
        threading.Event().wait(0.02)
    return False


@pytest.mark.django_db
def test_the_loop_marks_its_model_streams_only_when_asked(chat, script):
    script([[{"kind": "text", "text": "hi"}, DONE]] * 2)
    from agent.loop import run_agent

    plain = list(run_agent(chat, run=Run(chat)))
    assert not any(isinstance(step, Phase) for step in plain)
    marked = list(run_agent(chat, run=Run(chat, marks_phases=True)))
    assert marked[0] is Phase.MODEL and marked[2] is Phase.DATABASE
    assert [step for step in marked if not isinstance(step, Phase)][0] == ("token", {"text": "hi"})
    assert marked[-1][0] == "done"


@pytest.mark.django_db(transaction=True)
def test_a_turn_whose_driver_fails_is_logged_and_the_runners_serve_on(chat, monkeypatch, caplog, fresh_runners):
    """A bug past the turn's own error handling: logged with the turn, and the runner that ran the
    failing part closes its connections and takes the next job."""

    def broken(run):
        Message.objects.count()  # a database part that uses the runner's connection...
        raise RuntimeError("a bug")  # ...then fails
        yield  # (a generator, as `drive` is)

    monkeypatch.setattr(turns, "drive", broken)
    run = Run(chat, Turn.objects.create(session=chat))
    turns._in_background(run)
    assert f"turn {run.turn.pk} of session {chat.pk} failed" in caplog.text
    assert "RuntimeError: a bug" in caplog.text
    assert runners.call(lambda: Message.objects.filter(session=chat).count()) == 0
    connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_a_turn_cut_off_between_its_parts_still_ends_its_stream(chat, script, monkeypatch, caplog, fresh_runners):
    """Should the runner for a turn's part after its model stream never answer, the turn's events are
    closed in the turn's own context: its followers get their end, and nothing else fails."""
    script([[{"kind": "text", "text": "hi"}, DONE]])
    calls = []
    call = runners.call

    def second_fails(function, *args):
        calls.append(function)
        if len(calls) == 2:
            raise RuntimeError("the runner was lost")
        return call(function, *args)

    monkeypatch.setattr(runners, "call", second_fails)
    run, _ = turns.begin(chat, "hello")
    channel = hub.open_channel(str(run.turn.pk))
    turns._in_background(run)
    assert channel.closed and channel.since(0)[0] == ("token", {"text": "hi"})
    assert f"turn {run.turn.pk} of session {chat.pk} failed" in caplog.text
    assert "could not be closed" not in caplog.text
    connections.close_all()
