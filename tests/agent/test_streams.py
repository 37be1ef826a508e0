"""Turns apart from their connection: stop, resume by Last-Event-ID, following from the database, HTML flavour."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from agent import hub, turns
from agent.follow import follow
from agent.models import Message, Session, Turn
from agent.sse import encode_json
from agent.state import Run
from agent.tools import register, unregister
from tests.conftest import ApiClient, parse_sse, streamed_turn

DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}


def words(n, delay_ms=0):
    return [{"kind": "text", "text": f"w{i} ", "delay_ms": delay_ms} for i in range(n)]


@pytest.mark.django_db
def test_stop_flag_ends_the_turn_and_keeps_what_was_streamed(chat, script, settings):
    settings.AGENT_STOP_POLL_SECONDS = 0
    script([words(5) + [DONE]])
    run, _ = turns.begin(chat, "talk")
    turn = run.turn
    original = turns._stop_check

    def stop_after_two(r, channel):
        check, seen = original(r, channel), []

        def should_stop():
            seen.append(1)
            if len(seen) == 3:  # (the first look is before the model is called; then one per word)
                Turn.objects.filter(pk=r.turn.pk).update(stop_requested=True)
            return check()

        return should_stop

    turns._stop_check = stop_after_two
    try:
        hub.open_channel(str(turn.pk))
        turns.execute(run)
    finally:
        turns._stop_check = original
    turn.refresh_from_db()
    assert turn.status == "stopped"
    assert turn.terminal_event == "done" and turn.terminal_payload["stop_reason"] == "stopped"
    message = Message.objects.get(session=chat, role="assistant")
    assert message.stop_reason == "stopped"
    assert [p.text for p in message.parts.all()] == ["w0 w1 "]
    chat.refresh_from_db()
    assert chat.turn_id is None  # the lease is released


@pytest.mark.django_db
def test_stop_api_without_a_running_turn_is_409(api, chat):
    response = api.post(f"/api/agent/sessions/{chat.pk}/stop")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "no_turn"


@pytest.mark.django_db(transaction=True)
def test_turn_in_a_thread_streams_stops_and_outlives_its_reader(user, settings, tmp_path):
    """The real executor path: POST starts the turn, GET follows it, Stop ends it server-side."""
    settings.AGENT_TURN_EXECUTOR = "thread"
    settings.AGENT_STOP_POLL_SECONDS = 0.05
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"calls": [words(200, delay_ms=20) + [DONE]]}))
    settings.AGENT_BACKEND, settings.AGENT_FAKE_SCRIPT = "fake", str(path)
    session = Session.objects.create(user=user)
    api = ApiClient(user)
    response = api.send(session, "long please")
    assert response.status_code == 202
    body = api.transcript(session)
    assert body["running"] is True
    assert streamed_turn(body["stream_url"]) == streamed_turn(response.json()["stream_url"])
    assert api.send(session, "again").json()["error"]["code"] == "turn_in_progress"
    stream = api.client.get(response.json()["stream_url"])
    chunks = iter(stream.streaming_content)
    first = next(chunks)
    assert b"event: token" in first
    assert api.post(f"/api/agent/sessions/{session.pk}/stop").status_code == 202
    events = parse_sse(first + b"".join(chunks))
    assert events[-1][0] == "done" and events[-1][1]["stop_reason"] == "stopped"
    tokens = "".join(p["text"] for n, p in events if n == "token")
    assert 0 < len(tokens.split()) < 200
    message = Message.objects.get(session=session, role="assistant")
    assert [p.text for p in message.parts.all()] == [tokens]
    connections.close_all()


SILENT_MS = 30_000  # a model silent this long (thinking, slow to start): longer than the test may take


@pytest.mark.django_db(transaction=True, databases="__all__")  # (the watcher's own connection, with a pool)
@pytest.mark.parametrize("how", ["here", "watcher"])
def test_stop_reaches_a_model_that_is_silent(user, settings, tmp_path, how):
    """Stop while the model says nothing: the turn ends now, as stopped, with what it had said; not
    after the silence. `here`: the Stop is asked in the process that runs the turn; `watcher`: it is
    only in the database (asked on another worker), and the process's watcher finds it."""
    settings.AGENT_TURN_EXECUTOR = "thread"
    settings.AGENT_STOP_POLL_SECONDS = 0.05
    path = tmp_path / "s.json"
    silence = {"kind": "text", "text": "never", "delay_ms": SILENT_MS}
    path.write_text(json.dumps({"calls": [[{"kind": "text", "text": "Thinking"}, silence, DONE]]}))
    settings.AGENT_BACKEND, settings.AGENT_FAKE_SCRIPT = "fake", str(path)
    session = Session.objects.create(user=user)
    api = ApiClient(user)
    url = api.send(session, "think hard").json()["stream_url"]
    chunks = iter(api.client.get(url).streaming_content)
    first = next(chunks)
    assert b"Thinking" in first
    if how == "here":
        assert api.post(f"/api/agent/sessions/{session.pk}/stop").status_code == 202
    else:
        Turn.objects.filter(session=session).update(stop_requested=True)
    events = parse_sse(first + b"".join(chunks))
    assert events[-1] == ("done", {**events[-1][1], "stop_reason": "stopped"})
    assert "never" not in "".join(p["text"] for n, p in events if n == "token")
    turn = Turn.objects.get(session=session)
    assert turn.status == "stopped"
    message = Message.objects.get(session=session, role="assistant")
    assert message.stop_reason == "stopped" and [p.text for p in message.parts.all()] == ["Thinking"]
    connections.close_all()


@pytest.mark.django_db
def test_stop_pressed_before_the_turn_began_never_asks_the_model(chat, script):
    """Stop can be pressed as soon as the message is accepted, before the turn's runner took it up
    (the turn's Interrupt not made yet): the turn ends stopped without calling the model."""
    from agent.backends import get_backend

    script([[{"kind": "text", "text": "never", "delay_ms": SILENT_MS}, DONE]])
    run, _ = turns.begin(chat, "think hard")
    hub.open_channel(str(run.turn.pk)).request_stop()
    events = list(turns.drive(run))
    assert events[-1][0] == "done" and events[-1][1]["stop_reason"] == "stopped", events
    assert not [name for name, _ in events if name == "token"]
    assert Turn.objects.get(pk=run.turn.pk).status == "stopped"
    assert not get_backend().requests  # never called


@pytest.mark.django_db
def test_an_adapters_bug_that_meets_a_stop_is_still_logged(chat, script, caplog):
    from agent.backends import get_backend

    script([[DONE]])
    run, _ = turns.begin(chat, "hello")
    backend = get_backend()

    def stream(**kwargs):
        yield {"kind": "text", "text": "Hel"}
        hub.get_channel(str(run.turn.pk)).request_stop()
        raise TypeError("an adapter's bug")

    backend.stream = stream
    try:
        events = list(turns.drive(run))
    finally:
        del backend.stream
    assert events[-1][1]["stop_reason"] == "stopped"
    assert any(r.exc_info and "an adapter's bug" in str(r.exc_info[1]) for r in caplog.records), caplog.text


@pytest.mark.django_db
def test_reconnect_with_last_event_id_resumes_after_it(api, chat, script):
    """Even once another reader (a second tab) read the turn to its end: no gap after the id."""
    script([words(4) + [DONE]])
    url = api.send(chat, "hi").json()["stream_url"]
    assert [n for n, _ in api.events(url)] == ["token"] * 4 + ["done"]
    events = api.events(url, HTTP_LAST_EVENT_ID="1")
    assert [n for n, _ in events] == ["token", "token", "done"]
    assert [p["text"] for n, p in events if n == "token"] == ["w2 ", "w3 "]
    assert [n for n, _ in api.events(url)] == ["done"]  # re-opened without an id: its end at once
    for junk in ("9" * 5000, "-1", "x"):  # an id that is no event's is no id: the stream's end, never a 500
        assert [n for n, _ in api.events(url, HTTP_LAST_EVENT_ID=junk)] == ["done"]


def sse_ids(body: bytes) -> list[tuple[str | None, str]]:
    """(id, event name) of each event of an SSE body."""
    found = []
    for block in body.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if ": " in line)
        if "event" in fields:
            found.append((fields.get("id"), fields["event"]))
    return found


@pytest.mark.django_db
def test_a_stream_resumed_at_its_terminal_event_is_told_there_is_nothing_more(api, chat, script):
    """While the turn's channel is kept here and after it is forgotten (the linger), the same answer:
    204, which stops an EventSource's reconnecting; never the terminal event a second time."""
    script([words(3) + [DONE]])
    url = api.send(chat, "hi").json()["stream_url"]
    response = api.client.get(url)
    ids = sse_ids(b"".join(response.streaming_content))
    assert ids == [("0", "token"), ("1", "token"), ("2", "token"), ("3", "done")]
    _, turn_id = streamed_turn(url)
    assert Turn.objects.get(pk=turn_id).last_event_id == 3
    for forgotten in (False, True):
        if forgotten:
            hub._channels.pop(str(turn_id))  # what the sweep does once the channel lingered 30 s
        assert api.client.get(url, HTTP_LAST_EVENT_ID="3").status_code == 204
        assert api.client.get(url, HTTP_LAST_EVENT_ID="7").status_code == 204
        html = api.client.get(url, {"flavour": "html"}, HTTP_LAST_EVENT_ID="3")
        assert sse_ids(b"".join(html.streaming_content)) == [(None, "end")]  # the page's stream closes
        # Resumed before the end: the end, with its id (a client resumed at it again is told 204).
        resumed = sse_ids(b"".join(api.client.get(url, HTTP_LAST_EVENT_ID="1").streaming_content))
        assert resumed == ([("2", "token"), ("3", "done")] if not forgotten else [("3", "done")])
        assert [n for n, _ in api.events(url)] == ["done"]  # re-opened without an id: its end at once


@pytest.mark.django_db
def test_follow_from_database_when_the_turn_runs_in_another_process(chat, script):
    """No channel here (another worker runs the turn): persisted messages, then the terminal event."""
    from agent.transcript import add_message

    run, _ = turns.begin(chat, "hi")
    turn = run.turn
    add_message(
        run,
        "assistant",
        [{"type": "text", "text": "Hello"}, {"type": "tool_use", "id": "t1", "name": "x", "input": {"a": 1}}],
    )
    add_message(
        run,
        "tool",
        [{"type": "tool_result", "tool_use_id": "t1", "name": "x", "result": {"ok": 1}, "status": "ok"}],
    )
    Turn.objects.filter(pk=turn.pk).update(
        status="done", terminal_event="done", terminal_payload={"message_id": 1, "stop_reason": "end_turn", "usage": {}}
    )
    running = Turn(pk=turn.pk, session=chat, status="running")
    with CaptureQueriesContext(connection) as polled:
        items = list(follow_running(running))
    assert len(polled.captured_queries) == 3  # one poll: the new messages, their parts, the turn's state
    assert [(n, p) for _, n, p in items] == [
        ("token", {"text": "Hello"}),
        ("tool_use", {"id": "t1", "name": "x", "input": {"a": 1}}),
        ("tool_result", {"id": "t1", "name": "x", "status": "ok", "result": {"ok": 1}}),
        ("done", {"message_id": 1, "stop_reason": "end_turn", "usage": {}}),
    ]


@pytest.mark.django_db
def test_follow_from_database_sends_the_last_answer_of_a_turn_that_ends_between_two_reads(chat, script, monkeypatch):
    """The other worker writes its answer and ends the turn just after a poll read the replies."""
    from agent import follow as following
    from agent.transcript import add_message

    run, _ = turns.begin(chat, "hi")
    read_replies = following.replies

    def then_the_turn_ends(turn, after=-1):
        found = list(read_replies(turn, after))
        if not Message.objects.filter(session=chat, role="assistant").exists():
            add_message(run, "assistant", [{"type": "text", "text": "The answer."}])
            payload = {"message_id": 1, "stop_reason": "end_turn", "usage": {}}
            Turn.objects.filter(pk=run.turn.pk).update(status="done", terminal_event="done", terminal_payload=payload)
        return found

    monkeypatch.setattr(following, "replies", then_the_turn_ends)
    items = list(follow_running(Turn(pk=run.turn.pk, session=chat, status="running")))
    assert [n for _, n, _ in items] == ["token", "done"]
    assert items[0][2] == {"text": "The answer."}


def follow_running(turn):
    from agent.follow import _from_database

    return _from_database(turn, heartbeat=15)


@pytest.mark.django_db
def test_html_flavour_ends_with_end_and_escapes_everything(api, chat, script):
    script(
        [
            [
                {"kind": "text", "text": "<script>alert(1)</script>\nevent: done\ndata: x"},
                {"kind": "tool_use", "id": "c<1>", "name": "nope", "input": {"title": "<img src=x onerror=alert(1)>"}},
                {"kind": "done", "stop_reason": "tool_use"},
            ],
            [DONE],
        ]
    )
    url = api.send(chat, "hi").json()["stream_url"]
    body = b"".join(api.client.get(url + "?flavour=html").streaming_content).decode()
    names = [line[7:] for line in body.split("\n") if line.startswith("event: ")]
    assert names[-2:] == ["done", "end"]
    assert names.count("done") == 1  # the injected "event: done" stayed inside data lines
    assert "<script>" not in body and "<img src=x" not in body
    assert "&lt;script&gt;" in body


@pytest.mark.django_db
def test_the_html_end_of_a_turn_shows_its_calls_statuses_from_its_own_messages(api, chat, script):
    """However long the chat, the turn's end reads its own results, not every result of the chat."""
    call = {"kind": "tool_use", "id": "c1", "name": "nope", "input": {}}
    script(
        [
            [call, {"kind": "done", "stop_reason": "tool_use"}],
            [DONE],
            [{**call, "id": "c2"}, {**call, "id": "c3"}, {"kind": "done", "stop_reason": "tool_use"}],
            [DONE],
        ]
    )
    api.events(api.send(chat, "first").json()["stream_url"])
    url = api.send(chat, "second").json()["stream_url"]
    with CaptureQueriesContext(connection) as read:
        body = b"".join(api.client.get(url + "?flavour=html").streaming_content).decode()
    final = body.rsplit("event: done", 1)[1]
    assert 'id="chip-c2-status" data-status="error"' in final and 'id="chip-c3-status" data-status="error"' in final
    assert "chip-c1" not in final  # the earlier turn's call is not this turn's
    assert not [q for q in read.captured_queries if '"agent_part"."type" =' in q["sql"]]
    # Every call has its result: nothing can be waiting for a person, so that is not asked.
    assert not [q for q in read.captured_queries if "agent_approval" in q["sql"]]


@pytest.mark.django_db
def test_the_html_end_of_a_paused_turn_shows_its_call_waiting(api, chat, script, settings):
    settings.AGENT_CONFIRM_TOOLS = ["danger"]
    register("danger", description="Irreversible")(lambda session: {"ok": True})
    try:
        script(
            [
                [
                    {"kind": "tool_use", "id": "d1", "name": "danger", "input": {}},
                    {"kind": "done", "stop_reason": "tool_use"},
                ]
            ]
        )
        url = api.send(chat, "destroy").json()["stream_url"]
        body = b"".join(api.client.get(url + "?flavour=html").streaming_content).decode()
    finally:
        unregister("danger")
    final = body.rsplit("event: confirm", 1)[1]
    assert 'id="chip-d1-status" data-status="waiting"' in final
    assert "awaiting your OK" in final


@pytest.mark.django_db
def test_the_html_end_of_a_text_turn_reads_its_replies_once(api, chat, script, settings):
    settings.AGENT_BUDGET_TOKENS_PER_MINUTE = settings.AGENT_BUDGET_TOKENS_PER_HOUR = 0
    settings.AGENT_BUDGET_USD_PER_MONTH = settings.AGENT_BUDGET_GLOBAL_USD_PER_MONTH = 0
    script([[{"kind": "text", "text": "**hi**"}, DONE]])
    url = api.send(chat, "hi").json()["stream_url"]
    with CaptureQueriesContext(connection) as read:
        body = b"".join(api.client.get(url + "?flavour=html").streaming_content).decode()
    assert "<strong>hi</strong>" in body.rsplit("event: done", 1)[1]
    sql = [q["sql"] for q in read.captured_queries]
    # The turn's own messages and their parts, one read each; no caps, so no usage read for the meter.
    assert len([q for q in sql if '"agent_message"."turn_id" =' in q]) == 1, sql
    assert len([q for q in sql if 'FROM "agent_part"' in q]) == 1, sql
    assert not [q for q in sql if "SUM(" in q.upper()]


@pytest.mark.django_db
def test_finished_html_stream_answers_terminal_and_end_at_once(api, chat, script):
    script([[{"kind": "text", "text": "hi"}, DONE]])
    url = api.send(chat, "hi").json()["stream_url"]
    api.client.get(url)  # first reader consumes the live events
    b"".join(api.client.get(url).streaming_content)
    body = b"".join(api.client.get(url + "?flavour=html").streaming_content).decode()
    assert [line[7:] for line in body.split("\n") if line.startswith("event: ")] == ["done", "end"]


def test_sse_json_is_one_data_line():
    assert encode_json("token", {"text": "a\nb"}) == b'event: token\ndata: {"text":"a\\nb"}\n\n'


@pytest.mark.django_db
def test_rate_limit_refuses_and_stores_nothing(api, chat, script, settings):
    settings.AGENT_MESSAGES_PER_MINUTE = 2
    script([[{"kind": "text", "text": "ok"}, DONE]] * 3)
    assert api.send(chat, "one").status_code == 202
    assert api.send(chat, "two").status_code == 202
    response = api.send(chat, "three")
    assert response.status_code == 429
    body = response.json()
    assert body["error"]["code"] == "rate_limited"
    assert 1 <= body["retry_after_seconds"] <= 60
    assert Message.objects.filter(session=chat, role="user").count() == 2


@pytest.mark.django_db
def test_transcript_building_is_constant_queries(chat, django_assert_num_queries):
    from agent.transcript import add_message, build_neutral_messages

    add_message(Run(chat), "user", [{"type": "text", "text": "x"}])
    with django_assert_num_queries(1):  # messages and parts in one read
        build_neutral_messages(chat)
    for i in range(50):
        add_message(Run(chat), "user", [{"type": "text", "text": f"m{i}"}])
    with django_assert_num_queries(1):
        assert len(build_neutral_messages(chat)) == 51


@pytest.mark.django_db
def test_lease_blocks_across_workers_until_it_expires(chat):
    """The claim is one conditional UPDATE: a second claim fails while the lease holds."""
    from agent.exceptions import TurnInProgress

    turns.claim(chat)
    with pytest.raises(TurnInProgress):
        turns.claim(chat)


def test_heartbeat_is_sent_while_waiting():
    channel = hub.TurnChannel("x")
    turn = Turn(pk="00000000-0000-0000-0000-000000000000")
    hub._channels[str(turn.pk)] = channel
    try:
        gen = follow(turn, heartbeat=0.01)
        assert next(gen) == (None, "heartbeat", None)
        threading.Timer(0.02, lambda: (channel.publish("done", {"x": 1}), channel.close())).start()
        rest = list(gen)
        assert rest[-1] == (0, "done", {"x": 1})
    finally:
        hub._channels.pop(str(turn.pk), None)


def test_sse_text_gets_one_data_line_per_line_whatever_the_line_break():
    from agent.sse import encode

    assert encode("token", "a <b>", 3) == b"id: 3\nevent: token\ndata: a <b>\n\n"
    assert encode("token", "a\r\nb\rc\nd") == b"event: token\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
    assert encode("token", "\ud800") == b"event: token\ndata: ?\n\n"  # a lone surrogate


@pytest.mark.django_db
@pytest.mark.parametrize(
    "deltas, finish, note",
    [
        ([{"content": "I"}], "content_filter", "A content filter stopped this answer."),
        ([{"refusal": "I can't help with that."}], "stop", "The model declined to answer this request."),
    ],
)
def test_an_answer_a_filter_stopped_or_the_model_refused_says_so_on_the_page(api, chat, settings, deltas, finish, note):
    """Azure's content filter ends an answer mid-word (finish_reason content_filter), or before any text: without
    a note the page showed a reply that just stopped, or nothing at all."""
    from agent.backends import reset_backends
    from tests.agent.backends.openai_server import Reply, ScriptedOpenAIServer, sse

    server = ScriptedOpenAIServer().start()
    try:
        settings.AGENT_BACKEND, settings.OPENAI_BASE_URL, settings.AGENT_MODEL = "openai", server.url, "gpt-4o-mini"
        reset_backends()
        chunks = [{"choices": [{"index": 0, "delta": delta}]} for delta in deltas]
        server.script(Reply(body=sse(*chunks, {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})))
        url = api.send(chat, "hi").json()["stream_url"]
        body = b"".join(api.client.get(url + "?flavour=html").streaming_content).decode()
    finally:
        server.stop()
        reset_backends()
    assert f'<p class="note">{note}</p>' in body.replace("&#x27;", "'")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "pieces, shown",
    [
        (["Hi \ud83d", "\ude00 there"], "Hi 😀 there"),  # one emoji's two halves in two events
        (["\ud83d", "\ude00", "\ud83d", "\udc4d!"], "😀👍!"),  # events that are only halves
        (["a \ud83d\ude00", " b"], "a 😀 b"),  # both halves in one event
        (["cut \ud83d"], "cut ?"),  # a first half the answer never completes
        (["\ude00 x", "y \ud83d", "z"], "? xy ?z"),  # halves that make no character
    ],
    ids=["split", "halves-only", "whole", "unfinished", "unpaired"],
)
def test_a_character_split_across_two_text_events_is_shown_whole(chat, script, pieces, shown):
    """A server slicing its text in UTF-16 units ends an event halfway through an emoji: the person
    sees the emoji, not "??", and the transcript stores it as one character."""
    from agent.loop import run_agent
    from agent.transcript import add_message

    script([[{"kind": "text", "text": p} for p in pieces] + [DONE]])
    add_message(Run(chat), "user", [{"type": "text", "text": "hello"}])
    events = list(run_agent(chat))
    streamed = "".join(payload["text"] for name, payload in events if name == "token")
    assert streamed == shown
    assert all(payload["text"] for name, payload in events if name == "token")  # no empty token sent
    message = Message.objects.get(session=chat, role="assistant")
    assert "".join(p.text for p in message.parts.all()) == shown
    for name, payload in events:
        if name == "token":
            payload["text"].encode("utf-8")  # each token alone is valid UTF-8 for the stream


@pytest.mark.django_db
@pytest.mark.parametrize(
    "events, shown, stored",
    [
        ([{"text": "Hm \ud83e"}, {"text": "\udd14 so"}], "Hm 🤔 so", ["Hm 🤔 so"]),  # one emoji's halves
        ([{"text": "\ud83e"}, {"text": "\udd14"}], "🤔", ["🤔"]),  # events that are only halves
        ([{"text": "cut \ud83e"}, {"text": "", "signature": "sig"}], "cut ?", ["cut ?"]),  # the block closes
        ([{"text": "a \ud83e", "signature": "sig"}, {"text": "b"}], "a ?b", ["a ?", "b"]),  # closed as it ends
        ([{"text": "x \ud83e"}], "x ?", ["x ?"]),  # the answer's text comes next, never the rest
    ],
    ids=["split", "halves-only", "closed-after", "closed-with", "unfinished"],
)
def test_a_character_split_across_two_reasoning_events_is_shown_whole(chat, script, events, shown, stored):
    """Reasoning streams in pieces as answer text does, and the same servers slice it in UTF-16 units:
    the person sees the emoji the model thought in, and the stored reasoning keeps it whole. A block
    that closes (its signature) with half a character left shows "?" for it."""
    from agent.loop import run_agent
    from agent.transcript import add_message

    script([[{"kind": "reasoning", **e} for e in events] + [{"kind": "text", "text": "ok"}, DONE]])
    add_message(Run(chat), "user", [{"type": "text", "text": "hello"}])
    out = list(run_agent(chat))
    assert "".join(payload["text"] for name, payload in out if name == "reasoning") == shown
    assert all(payload["text"] for name, payload in out if name == "reasoning")  # no empty piece sent
    assert "".join(payload["text"] for name, payload in out if name == "token") == "ok"
    message = Message.objects.get(session=chat, role="assistant")
    assert [p.text for p in message.parts.all() if p.type == "reasoning"] == stored
