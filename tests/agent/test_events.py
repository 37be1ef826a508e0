"""The Redis event bus against a real `redis-server` of the test's own (docs/engine.md, "The event bus").

Two `RedisBus` instances stand for two processes: each has its own writer, reader and wake-up
stream; the turn's own in-process channel is never registered in the hub here, so a follower can
only hear it through Redis.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.utils import timezone

from agent import events, hub
from agent.events.local import LocalBus
from agent.events.redis import RedisBus, RedisTurnSink, read_key, turn_key
from agent.follow import follow
from agent.loop import run_agent
from agent.models import Message, Session, Turn
from agent.state import Run
from agent.transcript import add_message
from tests.agent.testapp.models import Note, Notebook, NotebookLink
from tests.redis_server import RedisServer


@pytest.fixture
def buses(redis_server) -> tuple[RedisBus, RedisBus]:
    return RedisBus(redis_server.url), RedisBus(redis_server.url)


def running_turn(bus: RedisBus, turn_id: str | None = None) -> hub.TurnChannel:
    """A turn's own channel as `turns.start` makes it, kept out of the hub (it runs 'elsewhere')."""
    turn_id = turn_id or str(uuid.uuid4())
    channel = hub.TurnChannel(turn_id)
    channel.sink = bus.open_turn(turn_id)
    return channel


def read_copy(copy: hub.TurnChannel, timeout: float = 10.0) -> list[tuple[str, object]]:
    seen, got = 0, []
    while not (copy.closed and seen >= copy.count()):
        assert copy.wait(seen, timeout), f"nothing arrived after {got}"
        new = copy.since(seen)
        got += new
        seen += len(new)
    return got


def test_a_follower_in_another_process_gets_every_event_in_order_each_its_own(buses):
    a, b = buses
    turn = running_turn(a)
    turn.publish("token", {"text": "first"})
    copy = b.follow_turn(turn.turn_id)
    assert copy is not None
    assert copy.wait(0, 10.0)  # the first token arrived before the turn went on
    assert copy.since(0) == [("token", {"text": "first"})]
    for i in range(200):
        turn.publish("token", {"text": f"t{i}"})
    turn.publish("done", {"message_id": 1, "stop_reason": "end_turn", "usage": {}})
    turn.close()
    got = read_copy(copy)
    assert got == [("token", {"text": "first"}), *[("token", {"text": f"t{i}"}) for i in range(200)]] + [
        ("done", {"message_id": 1, "stop_reason": "end_turn", "usage": {}})
    ]
    b.release(copy)
    client = redis.Redis.from_url(a.url)
    assert 0 < client.ttl(turn_key(turn.turn_id)) <= 600  # it goes away after the turn ended
    ids = [entry_id.decode() for entry_id, _ in client.xrange(turn_key(turn.turn_id))]
    assert ids == ["0-1", *[f"1-{n}" for n in range(202)]]  # SSE id n is entry 1-n


@pytest.mark.django_db(transaction=True)
def test_last_event_id_resumes_on_another_process_without_gap_or_duplicate(buses, chat, settings):
    a, _ = buses
    settings.AGENT_EVENTS_URL = a.url  # the follower's process reads through `events.get_bus()`
    settings.AGENT_EVENTS_BACKEND = "agent.events.redis.RedisBus"
    row = Turn.objects.create(session=chat)
    turn = running_turn(a, str(row.pk))
    for i in range(6):
        turn.publish("token", {"text": str(i)})
    items: list = []
    reader = threading.Thread(target=lambda: items.extend(follow(row, last_event_id=2, heartbeat=30)))
    reader.start()
    for i in range(6, 9):
        turn.publish("token", {"text": str(i)})
    turn.publish("done", {"message_id": None, "stop_reason": "end_turn", "usage": {}})
    turn.close()
    reader.join(20)
    assert [(i, name, p.get("text")) for i, name, p in items] == [
        *[(n, "token", str(n)) for n in range(3, 9)],
        (9, "done", None),
    ]


def test_one_reader_connection_per_process_whatever_it_follows(buses):
    a, b = buses
    turns = [running_turn(a) for _ in range(5)]
    for turn in turns:
        turn.publish("token", {"text": "x"})
    copies = [b.follow_turn(turn.turn_id) for turn in turns]
    for turn in turns:
        turn.publish("token", {"text": "y"})
    for copy in copies:
        assert copy.wait(1, 10.0)
    client = redis.Redis.from_url(a.url)
    names = {f"agent-events-reader-{bus.reader.token}" for bus in (a, b)}
    readers = [c for c in client.client_list() if c["name"] in names]
    assert len(readers) == 2  # a's (it hears Stop requests) and b's, which follows five streams
    assert {c["cmd"] for c in readers} == {"xread"}
    for turn, copy in zip(turns, copies, strict=True):
        turn.close()
        b.release(copy)


def test_a_copy_made_afresh_keeps_its_feed_when_a_follower_of_the_lost_one_leaves(buses):
    """The reader lost its connection (every copy lost; their followers go to the database), then a
    new stream followed the turn again: when the old follower gives its copy back, the new copy is
    not the one it gave back, and it still hears the turn to its end."""
    a, b = buses
    turn = running_turn(a)
    turn.publish("token", {"text": "first"})
    old = b.follow_turn(turn.turn_id)
    assert old is not None and old.wait(0, 10.0)
    b.reader.lose_everything()
    assert old.lost and old.closed
    new = b.follow_turn(turn.turn_id)
    assert new is not None and new is not old
    b.release(old)
    turn.publish("token", {"text": "second"})
    turn.publish("done", {"message_id": 1, "stop_reason": "end_turn", "usage": {}})
    turn.close()
    assert [name for name, _ in read_copy(new)] == ["token", "token", "done"]
    b.release(new)
    assert turn_key(turn.turn_id) not in b.reader.copies


def test_a_follower_whose_wake_up_failed_leaves_no_copy_behind(buses, monkeypatch):
    a, b = buses
    turn = running_turn(a)
    turn.publish("token", {"text": "first"})

    def refused() -> None:
        raise redis.ConnectionError("Redis went away")

    monkeypatch.setattr(b.reader, "wake", refused)
    assert b.follow_turn(turn.turn_id) is None  # (its stream follows from the database)
    assert turn_key(turn.turn_id) not in b.reader.copies
    turn.close()


def test_stop_reaches_the_process_running_the_turn(buses):
    a, b = buses
    turn_id = str(uuid.uuid4())
    channel = hub.open_channel(turn_id)  # registered in a's process, as `turns.start` does
    channel.sink = a.open_turn(turn_id)
    try:
        b.request_stop(turn_id)
        assert channel.wait(0, 0.0) is False
        for _ in range(200):  # the reader sets the flag as the Stop arrives
            if channel.stop:
                break
            threading.Event().wait(0.05)
        assert channel.stop
    finally:
        channel.close()


def test_named_channels_reach_listeners_in_every_process(buses):
    a, b = buses
    name = f"blog:{uuid.uuid4().hex[:6]}"
    heard_b = b.subscribe(name)
    heard_a = a.subscribe(name)
    a.publish(name, [{"type": "post.created", "id": 1}])
    assert heard_b.wait(10.0) == [[{"type": "post.created", "id": 1}]]
    assert heard_a.wait(10.0) == [[{"type": "post.created", "id": 1}]]
    b.unsubscribe(heard_b)
    a.unsubscribe(heard_a)


def test_the_local_bus_keeps_channels_in_process():
    bus = LocalBus()
    heard = bus.subscribe("blog:1")
    bus.publish("blog:1", ["x"])
    assert heard.wait(1.0) == [["x"]]
    bus.unsubscribe(heard)
    assert bus.follow_turn("any") is None  # streams on other workers follow the transcript


def test_without_a_url_the_bus_is_in_process(settings):
    settings.AGENT_EVENTS_URL = ""
    settings.AGENT_EVENTS_BACKEND = ""
    assert isinstance(events.get_bus(), LocalBus)


def test_shutting_down_ends_every_listener_and_each_later_one_at_once(settings):
    settings.AGENT_EVENTS_URL = ""
    settings.AGENT_EVENTS_BACKEND = ""
    before = events.subscribe("blog:1")
    try:
        events.shut_down()
        assert before.closed and before.wait(0.0) == []
        later = events.subscribe("blog:1")
        assert later.closed and later.wait(0.0) == []
        assert later not in events.get_bus().listeners.by_channel.get("blog:1", ())  # never registered
        events.publish("blog:1", ["x"])  # publishing still works (other processes may listen)
        assert later.wait(0.0) == []
    finally:
        events.unsubscribe(before)
        events._shutting_down.clear()  # (this process goes on to run other tests)


@pytest.mark.django_db(transaction=True)
def test_redis_lost_mid_turn_the_follower_ends_with_one_terminal_from_the_database(chat, settings, tmp_path):
    server = RedisServer().start()
    try:
        settings.AGENT_EVENTS_URL = server.url
        settings.AGENT_EVENTS_BACKEND = "agent.events.redis.RedisBus"
        a = RedisBus(server.url)
        row = Turn.objects.create(session=chat)
        Session.objects.filter(pk=chat.pk).update(turn=row, lease_until=timezone.now() + timedelta(minutes=5))
        turn = running_turn(a, str(row.pk))
        turn.publish("token", {"text": "before"})
        items: list = []
        reader = threading.Thread(target=lambda: items.extend(follow(row, heartbeat=30)))
        reader.start()
        for _ in range(200):
            if items:
                break
            threading.Event().wait(0.05)
        server.kill()
        turn.publish("token", {"text": "after"})  # the turn goes on; Redis is gone
        Turn.objects.filter(pk=row.pk).update(
            status=Turn.DONE,
            terminal_event="done",
            terminal_payload={"message_id": 7, "stop_reason": "end_turn", "usage": {}},
        )
        turn.close()
        reader.join(30)
        assert not reader.is_alive()
        assert [name for _, name, _ in items if name != "heartbeat"] == ["token", "done"]
        assert items[-1] == (None, "done", {"message_id": 7, "stop_reason": "end_turn", "usage": {}})
        assert a.check()  # manage.py check would say Redis does not answer
        server.start()  # back: new turns use it again (once the process's reader has reconnected)
        for _ in range(600):
            later = running_turn(a)
            later.close()
            if isinstance(later.sink, type(turn.sink)):
                break
            threading.Event().wait(0.05)
        assert isinstance(later.sink, type(turn.sink))
    finally:
        server.stop()


def test_a_batch_marks_lost_only_the_turns_whose_stream_is_gone(redis_server):
    """One pipeline carries several turns' events: only a turn whose stream Redis no longer has is
    marked lost (its followers go to the database); the turn beside it in the batch keeps its stream."""
    bus = RedisBus(redis_server.url)
    client = redis.Redis.from_url(redis_server.url)
    gone, kept = RedisTurnSink(bus, turn_key(str(uuid.uuid4()))), RedisTurnSink(bus, turn_key(str(uuid.uuid4())))
    client.xadd(kept.key, {"e": "start"}, id="0-1")  # only this turn's stream is there
    bus.writer.flush([(gone, "1-1", "token", {"text": "a"}), (kept, "1-1", "token", {"text": "b"})])
    assert (gone.lost, gone.marked) == (True, True)
    assert [(entry_id, fields) for entry_id, fields in client.xrange(gone.key)] == [(b"2-0", {b"e": b"lost"})]
    assert (kept.lost, kept.marked) == (False, False)
    assert [entry_id for entry_id, _ in client.xrange(kept.key)] == [b"0-1", b"1-1"]


def test_redis_restarted_empty_mid_turn_sends_later_followers_to_the_database():
    """A restart without persistence drops the turn's stream while the writer's connection idles; the
    pool reconnects unseen. Its later events must not make a new stream without its head (a follower
    would take the tail for the whole answer): the turn's followers are sent to the database."""
    server = RedisServer().start()
    try:
        a, b = RedisBus(server.url), RedisBus(server.url)
        turn = running_turn(a)
        turn.publish("token", {"text": "before"})
        client = redis.Redis.from_url(server.url)
        key = turn_key(turn.turn_id)
        for _ in range(200):
            if client.exists(key) and client.xlen(key) == 2:
                break
            threading.Event().wait(0.05)
        assert [entry_id for entry_id, _ in client.xrange(key)] == [b"0-1", b"1-0"]
        server.kill()
        server.start()  # empty
        client = redis.Redis.from_url(server.url)
        turn.publish("token", {"text": "after"})
        for _ in range(200):
            if turn.sink.lost and client.exists(key):
                break
            threading.Event().wait(0.05)
        assert turn.sink.lost
        assert [(entry_id, fields) for entry_id, fields in client.xrange(key)] == [(b"2-0", {b"e": b"lost"})]
        copy = b.follow_turn(turn.turn_id)  # a stream opened now, on another worker ...
        assert copy is not None and copy.lost and copy.count() == 0  # ... goes to the database, not to a tail
        b.release(copy)
        turn.publish("done", {"message_id": 1, "stop_reason": "end_turn", "usage": {}})
        turn.close()
        for _ in range(200):
            if 0 < client.ttl(key) <= 600:
                break
            threading.Event().wait(0.05)
        assert [entry_id for entry_id, _ in client.xrange(key)] == [b"2-0"] and 0 < client.ttl(key) <= 600
    finally:
        server.stop()


@pytest.mark.django_db(transaction=True)
def test_a_turn_that_ended_without_its_terminal_on_redis_ends_its_followers_from_the_database(buses, chat, settings):
    """Its worker died mid-turn, say: the follower's next quiet spell finds the turn over in the database."""
    a, _ = buses
    settings.AGENT_EVENTS_URL = a.url
    settings.AGENT_EVENTS_BACKEND = "agent.events.redis.RedisBus"
    row = Turn.objects.create(session=chat)
    Session.objects.filter(pk=chat.pk).update(turn=row, lease_until=timezone.now() + timedelta(minutes=5))
    turn = running_turn(a, str(row.pk))
    turn.publish("token", {"text": "half"})  # and then nothing: no terminal event, no `lost` mark
    items: list = []
    reader = threading.Thread(target=lambda: items.extend(follow(row, heartbeat=0.2)))
    reader.start()
    for _ in range(200):
        if items:
            break
        threading.Event().wait(0.05)
    assert items[0] == (0, "token", {"text": "half"})
    Turn.objects.filter(pk=row.pk).update(
        status=Turn.ERROR, terminal_event="error", terminal_payload={"code": "chat_error", "message": "Sorry."}
    )
    reader.join(30)
    assert [(i, name) for i, name, _ in items if name != "heartbeat"] == [(0, "token"), (None, "error")]


# --- Redis lost mid-turn: the follower on another worker still gets everything the turn said ---------

SAID = ["Let ", "me ", "write ", "that ", "down."]
THEN = ["Written: ", "one ", "note."]


@pytest.fixture
def events_redis(settings) -> Iterator[RedisServer]:
    """A `redis-server` of the test's own as the process's event bus (`events.get_bus()`); the test may
    kill it."""
    server = RedisServer().start()
    settings.AGENT_EVENTS_URL = server.url
    settings.AGENT_EVENTS_BACKEND = "agent.events.redis.RedisBus"
    yield server
    server.stop()


def a_turn_that_writes_a_note(script, user) -> tuple[Turn, Iterator[tuple[str, Any]]]:
    """A notebook chat's running turn, and its loop's events to come: five words, a `write_note`
    call (a tool result and one effect), then three words."""
    script(
        [
            [
                *({"kind": "text", "text": word} for word in SAID),
                {"kind": "tool_use", "id": "w1", "name": "write_note", "input": {"title": "Milk"}},
                {"kind": "done", "stop_reason": "tool_use"},
            ],
            [*({"kind": "text", "text": word} for word in THEN), {"kind": "done", "stop_reason": "end_turn"}],
        ]
    )
    chat = Session.objects.create(user=user, purpose="chat", system_prompt="You keep notes.")
    NotebookLink.objects.create(session=chat, notebook=Notebook.objects.create(owner=user, name="ideas"))
    row = Turn.objects.create(session=chat)
    Session.objects.filter(pk=chat.pk).update(turn=row, lease_until=timezone.now() + timedelta(minutes=5))
    add_message(Run(chat, row), Message.USER, [{"type": "text", "text": "Note milk, please."}])
    return row, iter(run_agent(Session.objects.get(pk=chat.pk), turn=row))


def run_to_the_end(turn: hub.TurnChannel, steps: Iterator[tuple[str, Any]], row: Turn) -> tuple[str, Any]:
    """Publish the loop's remaining events, then end the turn as `turns.drive` does."""
    for name, payload in steps:
        turn.publish(name, payload)
    Turn.objects.filter(pk=row.pk).update(status=Turn.DONE, terminal_event=name, terminal_payload=payload)
    turn.close()
    return name, payload


def reply_text(row: Turn) -> str:
    """The turn's answer as the transcript holds it: the text parts of its assistant messages."""
    messages = Message.objects.filter(turn=row, role=Message.ASSISTANT).order_by("position")
    return "".join(p.text for m in messages for p in m.parts.order_by("position") if p.type == "text")


def wait_for(condition, what: str) -> None:
    for _ in range(400):
        if condition():
            return
        threading.Event().wait(0.05)
    raise AssertionError(f"never: {what}")


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_redis_lost_mid_turn_the_follower_still_gets_the_rest_of_the_turn_from_the_transcript(
    events_redis, script, user
):
    """Two words reach the follower through Redis; Redis dies; the turn says three more, writes a
    note and answers. The follower ends the part it had begun, sends the rest whole, without ids,
    and ends with exactly one terminal event."""
    server = events_redis
    row, steps = a_turn_that_writes_a_note(script, user)
    turn = running_turn(RedisBus(server.url), str(row.pk))
    for _ in range(2):
        turn.publish(*next(steps))
    items: list = []
    reader = threading.Thread(target=lambda: items.extend(follow(row, heartbeat=30)))
    reader.start()
    wait_for(lambda: len(items) >= 2, "the first two words reached the follower")
    server.kill()
    terminal = run_to_the_end(turn, steps, row)
    reader.join(30)
    assert not reader.is_alive()
    got = [item for item in items if item[1] != "heartbeat"]
    note = Note.objects.get()
    assert got == [
        (0, "token", {"text": "Let "}),
        (1, "token", {"text": "me "}),
        (None, "token", {"text": "write that down."}),  # the rest of the part the follower had begun
        (None, "tool_use", {"id": "w1", "name": "write_note", "input": {"title": "Milk"}}),
        (None, "tool_result", {"id": "w1", "name": "write_note", "status": "ok", "result": {"id": note.pk}}),
        (None, "effects", [{"type": "note.written", "id": note.pk}]),
        (None, "token", {"text": "Written: one note."}),
        (None, *terminal),
    ]
    assert "".join(p["text"] for _, name, p in got if name == "token") == reply_text(row)


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_a_follower_opened_after_redis_marked_the_turn_off_it_gets_the_whole_turn_from_the_transcript(
    events_redis, script, user
):
    """Redis restarted empty mid-turn: the turn's next event finds no stream and writes `2-0`. A
    stream opened then on another worker has none of the turn's events: it sends all of them from the
    transcript as they are written, then one terminal event."""
    server = events_redis
    row, steps = a_turn_that_writes_a_note(script, user)
    turn = running_turn(RedisBus(server.url), str(row.pk))
    key = turn_key(turn.turn_id)
    turn.publish(*next(steps))
    client = redis.Redis.from_url(server.url)
    wait_for(lambda: client.exists(key) and client.xlen(key) == 2, "the first word reached Redis")
    server.kill()
    server.start()  # empty
    client = redis.Redis.from_url(server.url)
    turn.publish(*next(steps))
    wait_for(lambda: client.exists(key), "the turn was marked off Redis")
    items: list = []
    reader = threading.Thread(target=lambda: items.extend(follow(row, heartbeat=0.5)))
    reader.start()
    wait_for(lambda: items, "the follower waited on the transcript (its first heartbeat)")
    terminal = run_to_the_end(turn, steps, row)
    reader.join(30)
    assert not reader.is_alive()
    got = [item for item in items if item[1] != "heartbeat"]
    assert [(i, name) for i, name, _ in got] == [
        (None, name) for name in ("token", "tool_use", "tool_result", "effects", "token", terminal[0])
    ]
    assert "".join(p["text"] for _, name, p in got if name == "token") == reply_text(row) == "".join(SAID + THEN)


@pytest.mark.django_db(transaction=True, databases="__all__")
def test_resumed_while_redis_is_down_the_stream_sends_the_end_alone_never_words_twice(events_redis, script, user):
    """A client that had the first three events reconnects (`Last-Event-ID: 2`) to a worker that
    cannot reach Redis: what it had is unknown, so it gets no words again, only the turn's end."""
    server = events_redis
    row, steps = a_turn_that_writes_a_note(script, user)
    turn = running_turn(RedisBus(server.url), str(row.pk))
    for _ in range(3):
        turn.publish(*next(steps))
    server.kill()
    items: list = []
    reader = threading.Thread(target=lambda: items.extend(follow(row, last_event_id=2, heartbeat=0.5)))
    reader.start()
    wait_for(lambda: items, "the follower waited for the turn (its first heartbeat)")
    terminal = run_to_the_end(turn, steps, row)
    reader.join(30)
    assert not reader.is_alive()
    assert [item for item in items if item[1] != "heartbeat"] == [(None, *terminal)]


def test_a_redis_that_refuses_the_urls_password_is_said_to_refuse_it_not_to_be_silent(redis_server):
    """(A wrong user or password in AGENT_EVENTS_URL was reported by `manage.py check` as "does not answer",
    sending the operator to look for a server that was up.)"""
    bus = RedisBus(redis_server.url.replace("redis://", "redis://nobody:hunter2@"))
    (sentence,) = bus.check()
    assert sentence == (
        f"The Redis server of AGENT_EVENTS_URL ({redis_server.url}) "
        "refuses its user or password: streams on other workers fall back to the database until it accepts them."
    )
    assert "hunter2" not in sentence


# --- A stream first opened after its turn ended: the whole turn on any host, once ------------------

LATE = [("token", {"text": "one "}), ("token", {"text": "two "}), ("token", {"text": "three"})]
LATE_END = ("done", {"message_id": None, "stop_reason": "end_turn", "usage": {}})


@pytest.fixture
def on_redis(buses, settings) -> tuple[RedisBus, RedisBus]:
    """`buses`, this process's own bus set to their Redis (the second stands for another host)."""
    settings.AGENT_EVENTS_URL = buses[0].url
    settings.AGENT_EVENTS_BACKEND = "agent.events.redis.RedisBus"
    return buses


def an_ended_turn(bus: RedisBus, row: Turn, own: bool = False) -> hub.TurnChannel:
    """`row`'s turn, run through `bus` to its end as `turns.drive` does: three words, then `done`,
    on Redis (once its Stream expires after the end) and in its row. `own`: its channel is in this
    process's hub, as on the worker that ran it."""
    turn = hub.open_channel(str(row.pk)) if own else hub.TurnChannel(str(row.pk))
    turn.sink = bus.open_turn(turn.turn_id)
    for name, payload in [*LATE, LATE_END]:
        turn.publish(name, payload)
    Turn.objects.filter(pk=row.pk).update(
        status=Turn.DONE, terminal_event=LATE_END[0], terminal_payload=LATE_END[1], last_event_id=len(LATE)
    )
    turn.close()
    client = redis.Redis.from_url(bus.url)
    key = turn_key(turn.turn_id)
    wait_for(lambda: client.xlen(key) == 2 + len(LATE) and client.ttl(key) > 0, "the turn's end reached Redis")
    return turn


WHOLE = [*((i, *event) for i, event in enumerate(LATE)), (len(LATE), *LATE_END)]


@pytest.mark.django_db(transaction=True)
def test_a_stream_first_opened_after_the_end_on_another_host_gets_the_whole_turn_once(on_redis, chat):
    """The turn ran on `a`; nobody followed it. A stream first opened here, where its channel is not,
    gets every event with its id, then the end; a stream opened again (here or anywhere) its end alone."""
    a, b = on_redis
    row = Turn.objects.create(session=chat)
    an_ended_turn(a, row)
    assert list(follow(row, heartbeat=30)) == WHOLE
    assert 0 < redis.Redis.from_url(a.url).ttl(read_key(str(row.pk))) <= 600  # gone with the turn's Stream
    assert list(follow(row, heartbeat=30)) == [WHOLE[-1]]
    assert b.was_read(str(row.pk))  # every process sees it read


@pytest.mark.django_db(transaction=True)
def test_a_stream_opened_as_the_turn_ends_waits_for_its_end_on_its_way_to_redis(on_redis, chat):
    """The turn's row says it ended before its terminal event reached Redis (its writer sends it a
    moment later): a stream first opened then still gets the whole turn."""
    a, _ = on_redis
    row = Turn.objects.create(session=chat)
    turn = running_turn(a, str(row.pk))
    for name, payload in LATE:
        turn.publish(name, payload)
    client, key = redis.Redis.from_url(a.url), turn_key(str(row.pk))
    wait_for(lambda: client.xlen(key) == 1 + len(LATE), "the words reached Redis")
    Turn.objects.filter(pk=row.pk).update(
        status=Turn.DONE, terminal_event=LATE_END[0], terminal_payload=LATE_END[1], last_event_id=len(LATE)
    )
    later = threading.Timer(0.3, lambda: (turn.publish(*LATE_END), turn.close()))
    later.start()
    try:
        assert list(follow(row, heartbeat=30)) == WHOLE
    finally:
        later.join()


@pytest.mark.django_db(transaction=True)
def test_read_to_the_end_on_another_host_the_turns_own_worker_sends_its_end_alone(on_redis, chat):
    """The turn's channel still lingers on its own worker (this process), never read here; a stream on
    another host (here without the channel) reads it to its end: the turn's own worker then agrees,
    a stream opened there from scratch gets the end alone."""
    a, _ = on_redis
    row = Turn.objects.create(session=chat)
    own = an_ended_turn(a, row, own=True)
    try:
        hub._channels.pop(own.turn_id)  # another host: no channel of the turn
        assert list(follow(row, heartbeat=30)) == WHOLE
        hub._channels[own.turn_id] = own  # back on the turn's own worker
        assert list(follow(row, heartbeat=30)) == [WHOLE[-1]]
        assert list(follow(row, last_event_id=1, heartbeat=30)) == WHOLE[2:]  # resumed: what followed the id
    finally:
        hub._channels.pop(own.turn_id, None)


@pytest.mark.django_db(transaction=True)
def test_read_to_the_end_on_the_turns_own_worker_another_host_sends_its_end_alone(on_redis, chat):
    a, _ = on_redis
    row = Turn.objects.create(session=chat)
    own = an_ended_turn(a, row, own=True)
    try:
        assert list(follow(row, heartbeat=30)) == WHOLE  # on the turn's own worker
        hub._channels.pop(own.turn_id)  # another host
        assert list(follow(row, heartbeat=30)) == [WHOLE[-1]]
    finally:
        hub._channels.pop(own.turn_id, None)


@pytest.mark.django_db(transaction=True)
def test_a_turn_not_whole_on_redis_is_sent_its_end_alone_when_first_opened_after_it(on_redis, chat):
    """Its events stopped reaching Redis after the first word (`2-0`): the copy holds a part of the turn
    only, so a stream first opened after the end gets the end (the page draws the turn from the
    transcript), never a turn with a hole in it."""
    a, _ = on_redis
    row = Turn.objects.create(session=chat)
    turn = running_turn(a, str(row.pk))
    client, key = redis.Redis.from_url(a.url), turn_key(str(row.pk))
    turn.publish(*LATE[0])
    wait_for(lambda: client.xlen(key) == 2, "the first word reached Redis")
    assert isinstance(turn.sink, RedisTurnSink)
    turn.sink.lost = True  # (as after a failed write)
    for name, payload in [*LATE[1:], LATE_END]:
        turn.publish(name, payload)
    Turn.objects.filter(pk=row.pk).update(
        status=Turn.DONE, terminal_event=LATE_END[0], terminal_payload=LATE_END[1], last_event_id=len(LATE)
    )
    turn.close()
    wait_for(lambda: client.xlen(key) == 3 and client.ttl(key) > 0, "the turn's end reached Redis")
    assert list(follow(row, heartbeat=30)) == [WHOLE[-1]]


@pytest.mark.django_db(transaction=True)
def test_with_redis_down_each_worker_knows_of_its_own_followers_only(events_redis, chat):
    """Redis gone after the turn ended: the turn's own worker sends the whole turn to its first stream
    and the end alone to the next, as without Redis; another host sends the end alone."""
    row = Turn.objects.create(session=chat)
    own = an_ended_turn(RedisBus(events_redis.url), row, own=True)
    events_redis.kill()
    try:
        assert list(follow(row, heartbeat=30)) == WHOLE
        assert list(follow(row, heartbeat=30)) == [WHOLE[-1]]
        hub._channels.pop(own.turn_id)
        own.delivered = False
        assert list(follow(row, heartbeat=30)) == [WHOLE[-1]]
    finally:
        hub._channels.pop(own.turn_id, None)
