"""A stream of the worker that started a turn runs the turn itself (one greenlet instead of two),
and hands the rest to a greenlet (here a thread) of its own if it goes away."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from agent import hub, turns
from agent.follow import follow_batches
from agent.models import Message, Turn

DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}


def words(n):
    return [{"kind": "text", "text": f"w{i} "} for i in range(n)]


def waiting_turn(chat):
    """A turn begun and waiting for its stream, as `turns.start` leaves it under gevent."""
    turn, _ = turns.begin(chat, "hi")
    channel = hub.open_channel(str(turn.pk))
    channel.pending = turn
    return turn, channel


@pytest.mark.django_db
def test_the_first_stream_runs_the_turn_and_a_second_follows_it(chat, script):
    script([words(3) + [DONE]])
    turn, channel = waiting_turn(chat)
    first = follow_batches(turn)
    batch = next(first)  # runs the turn up to its first event
    assert channel.pending is None  # taken: nobody else runs it
    assert batch == [(0, "token", {"text": "w0 "})]
    second: list = []  # another tab, opened mid-turn
    tab = threading.Thread(target=lambda: second.extend(i for b in follow_batches(turn, last_event_id=0) for i in b))
    tab.start()
    rest = [item for b in first for item in b]
    tab.join(10)
    assert [n for _, n, _ in rest] == ["token", "token", "done"]
    assert [(i, n) for i, n, _ in second] == [(1, "token"), (2, "token"), (3, "done")]  # same ids, same events
    turn.refresh_from_db()
    assert turn.status == "done" and channel.closed and channel.delivered
    assert Message.objects.get(session=chat, role="assistant").parts.get().text == "w0 w1 w2 "


@pytest.mark.django_db(transaction=True)
def test_a_stream_that_goes_away_leaves_the_turn_running_to_its_end(chat, script):
    script([words(50) + [DONE]])
    turn, channel = waiting_turn(chat)
    stream = follow_batches(turn)
    next(stream), next(stream)
    stream.close()  # the browser went away after two tokens
    deadline = time.monotonic() + 20
    while not Turn.objects.filter(pk=turn.pk, status="done").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    turn.refresh_from_db()
    assert turn.status == "done" and turn.terminal_payload["stop_reason"] == "end_turn"
    text = Message.objects.get(session=chat, role="assistant").parts.get().text
    assert text == "".join(f"w{i} " for i in range(50))
    assert [n for n in channel.names].count("token") == 50
    connections.close_all()
