"""A stream of the worker that started a turn runs the turn itself (one greenlet instead of two),
and hands the rest to a greenlet (here a thread) of its own if it goes away."""

from __future__ import annotations

import threading

import pytest
from django.db import connections

from agent import hub, turns
from agent.follow import follow_batches
from agent.models import Message

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
    before = set(threading.enumerate())
    stream.close()  # the browser went away after two tokens
    for carrying_on in set(threading.enumerate()) - before:
        carrying_on.join(20)
    turn.refresh_from_db()
    assert turn.status == "done" and turn.terminal_payload["stop_reason"] == "end_turn"
    text = Message.objects.get(session=chat, role="assistant").parts.get().text
    assert text == "".join(f"w{i} " for i in range(50))
    assert [n for n in channel.names].count("token") == 50
    connections.close_all()


@pytest.fixture
def under_gevent(monkeypatch, settings):
    """`turns.start` as under gunicorn's gevent worker, with gevent's spawns recorded instead of run."""
    import gevent

    settings.AGENT_TURN_EXECUTOR = "auto"
    calls = []
    monkeypatch.setattr(turns, "gevent_patched", lambda: True)
    monkeypatch.setattr(turns.watch, "ensure_running", lambda: None)
    monkeypatch.setattr(gevent, "spawn", lambda *a: calls.append(("spawn", *a)))
    monkeypatch.setattr(gevent, "spawn_later", lambda *a: calls.append(("spawn_later", *a)))
    return calls


@pytest.mark.django_db(transaction=True)
def test_a_new_turn_waits_for_its_stream_then_runs_on_its_own(chat, script, settings, under_gevent):
    script([words(2) + [DONE]])
    settings.AGENT_ADOPT_SECONDS = 0.25
    turn, _ = turns.begin(chat, "hi")
    turns.start(turn)
    channel = hub.get_channel(str(turn.pk))
    assert channel.pending is turn
    assert under_gevent == [("spawn_later", 0.25, turns._unless_adopted, channel)]
    runner = threading.Thread(target=turns._unless_adopted, args=(channel,))  # as the greenlet would
    runner.start()  # no stream came: it runs on its own
    runner.join(20)
    turn.refresh_from_db()
    assert turn.status == "done" and channel.pending is None
    turns._unless_adopted(channel)  # and only once
    assert Message.objects.filter(session=chat, role="assistant").count() == 1
    connections.close_all()


@pytest.mark.django_db
def test_with_adoption_off_every_turn_runs_in_a_greenlet_of_its_own(chat, settings, under_gevent):
    settings.AGENT_ADOPT_SECONDS = 0
    turn, _ = turns.begin(chat, "hi")
    turns.start(turn)
    channel = hub.get_channel(str(turn.pk))
    assert channel.pending is None
    assert under_gevent == [("spawn", turns._in_background, turn)]
    channel.close()  # the recorded spawn never runs it: leave no turn "running" for the process watcher


def test_a_session_handed_to_a_turn_keeps_the_user_not_the_request(rf, django_user_model):
    """Auth's lazy `request.user` closes over the request; a turn holds its session's user for
    seconds, and must not keep the whole request alive with it."""
    from django.utils.functional import SimpleLazyObject

    from agent.views import request_user

    user = django_user_model(username="ann")
    request = rf.get("/")
    request.user = SimpleLazyObject(lambda: user)
    assert request_user(request) is request.user  # not evaluated yet: the wrapper, never its sentinel
    assert request.user.username == "ann"
    assert request_user(request) is user
    assert type(request_user(request)) is django_user_model


def _turn_lookups(queries):
    return [q["sql"] for q in queries if q["sql"].startswith("SELECT") and 'FROM "agent_turn"' in q["sql"]]


@pytest.mark.django_db(transaction=True)
def test_the_stream_that_takes_over_a_new_turn_does_not_load_it_again(api, chat, script, settings, under_gevent):
    """The POST left the turn, its chat and user in this worker's channel: the stream that follows
    checks them against the request instead of loading them again."""
    from django.test.utils import CaptureQueriesContext

    script([words(2) + [DONE]])
    settings.AGENT_ADOPT_SECONDS = 0.25
    accepted = api.send(chat, "hi")
    assert accepted.status_code == 202
    with CaptureQueriesContext(connections["default"]) as ctx:
        events = api.events(accepted.json()["stream_url"])
    assert [name for name, _ in events] == ["token", "token", "done"]
    assert _turn_lookups(ctx.captured_queries) == []
    connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_another_users_stream_request_for_a_new_turn_finds_nothing(
    api, chat, other_user, script, settings, under_gevent
):
    from tests.conftest import ApiClient

    script([words(2) + [DONE]])
    settings.AGENT_ADOPT_SECONDS = 0.25
    accepted = api.send(chat, "hi")
    url = accepted.json()["stream_url"]
    channel = hub.get_channel(url.rstrip("/").split("/")[-2])
    intruder = ApiClient(other_user)
    response = intruder.get(url)
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    elsewhere = url.replace(str(chat.pk), "00000000-0000-4000-8000-000000000000")
    assert api.get(elsewhere).status_code == 404  # the right user, the wrong chat
    assert channel.pending is not None  # still waiting for its own stream
    assert [name for name, _ in api.events(url)] == ["token", "token", "done"]
    connections.close_all()
