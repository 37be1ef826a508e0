"""The bytes a stream sends when it replays a turn: from the transcript, and from the bus's copy.

Pinned byte for byte (SSE names, ids, data), whatever types the engine gives its events inside.
"""

from __future__ import annotations

import pytest

from agent import hub
from agent.backfill import Sent
from agent.events.reader import Copy, Reader
from agent.events.redis import RedisBus
from agent.follow import follow_batches
from agent.models import Message, Turn
from agent.state import Run
from agent.transcript import add_message
from agent.views import _html_events, _json_events


def a_turn_said(chat) -> Turn:
    """A running turn whose worker died (it holds no lease) after writing a tool cycle and an answer."""
    turn = Turn.objects.create(session=chat)
    run = Run(chat, turn)
    add_message(run, Message.USER, [{"type": "text", "text": "Hi"}])
    add_message(
        run,
        Message.ASSISTANT,
        [
            {"type": "reasoning", "text": "Think <first>", "signature": "sig"},
            {"type": "text", "text": "Looking\nit up: \u00e9"},
            {"type": "tool_use", "id": "c1", "name": "nope", "input": {"q": "x\ny"}},
        ],
    )
    add_message(
        run,
        Message.TOOL,
        [
            {
                "type": "tool_result",
                "tool_use_id": "c1",
                "name": "nope",
                "status": "error",
                "result": {"error": "Unknown tool"},
                "effects": [{"id": 3, "type": "note.written"}],  # (keys in the order PostgreSQL's jsonb keeps)
            }
        ],
    )
    add_message(run, Message.ASSISTANT, [{"type": "text", "text": "Done."}])
    return turn


FROM_THE_TRANSCRIPT = (
    b'event: reasoning\ndata: {"text":"Think <first>"}\n\n'
    b'event: token\ndata: {"text":"Looking\\nit up: \xc3\xa9"}\n\n'
    b'event: tool_use\ndata: {"id":"c1","name":"nope","input":{"q":"x\\ny"}}\n\n'
    b'event: tool_result\ndata: {"id":"c1","name":"nope","status":"error","result":{"error":"Unknown tool"}}\n\n'
    b'event: effects\ndata: [{"id":3,"type":"note.written"}]\n\n'
    b'event: token\ndata: {"text":"Done."}\n\n'
    b'event: error\ndata: {"code":"chat_error","message":"Something went wrong on our side. Your message is saved; '
    b'please try again."}\n\n'
)


@pytest.mark.django_db
def test_a_replay_from_the_transcript_sends_these_bytes(chat):
    turn = a_turn_said(chat)
    assert b"".join(_json_events(follow_batches(turn, heartbeat=30))) == FROM_THE_TRANSCRIPT


@pytest.mark.django_db
def test_a_replay_from_the_transcript_sends_these_html_bytes(chat):
    turn = a_turn_said(chat)
    body = b"".join(_html_events(follow_batches(turn, heartbeat=30), turn))
    head, final = body.split(b"event: error\n", 1)
    assert head == HTML_FROM_THE_TRANSCRIPT
    assert final.startswith(b"data: ") and final.endswith(b"\n\nevent: end\ndata: end\n\n")


HTML_FROM_THE_TRANSCRIPT = (
    b"event: reasoning\ndata: Think &lt;first&gt;\n\n"
    b"event: token\ndata: Looking\ndata: it up: \xc3\xa9\n\n"
    b'event: tool_use\ndata: <span class="chip" id="chip-c1"><span class="chip-name">nope</span>'
    b'<span class="chip-input" title="q: x y">q: x y</span>'
    b'<span class="chip-status" id="chip-c1-status" data-status="running">running</span></span>\ndata: \n\n'
    b'event: tool_result\ndata: <span class="chip-status" id="chip-c1-status" hx-swap-oob="true" '
    b'data-status="error">failed</span>\ndata: \n\n'
    b'event: effects\ndata: [{"id":3,"type":"note.written"}]\n\n'
    b"event: token\ndata: Done.\n\n"
)


@pytest.mark.django_db(transaction=True)
def test_a_replay_from_the_bus_after_last_event_id_sends_these_bytes(redis_server, chat, settings):
    """What crossed Redis (its JSON written compactly, read back) is sent as the turn's own process would."""
    settings.AGENT_EVENTS_URL = redis_server.url
    settings.AGENT_EVENTS_BACKEND = "agent.events.redis.RedisBus"
    row = Turn.objects.create(session=chat)
    turn = hub.TurnChannel(str(row.pk))  # the turn's own channel, on another worker (not in this hub)
    turn.sink = RedisBus(redis_server.url).open_turn(turn.turn_id)
    turn.publish("token", {"text": "Had "})
    turn.publish("token", {"text": "this."})
    turn.publish("token", {"text": " Then <b>\u00e9\n\ud800"})
    turn.publish("reasoning", {"text": "hmm"})
    turn.publish("tool_use", {"id": "c1", "name": "nope", "input": {"a": [1, None]}})
    turn.publish("tool_result", {"id": "c1", "name": "nope", "status": "ok", "result": {"ok": True}})
    turn.publish("effects", [{"type": "note.written", "id": 3}])
    turn.publish("done", {"message_id": 7, "stop_reason": "end_turn", "usage": {"input_tokens": 1}})
    turn.close()
    body = b"".join(_json_events(follow_batches(row, last_event_id=1, heartbeat=30)))
    assert body == FROM_THE_BUS


FROM_THE_BUS = (  # (a lone surrogate is sent as "?")
    b'id: 2\nevent: token\ndata: {"text":" Then <b>\xc3\xa9\\n?"}\n\n'
    b'id: 3\nevent: reasoning\ndata: {"text":"hmm"}\n\n'
    b'id: 4\nevent: tool_use\ndata: {"id":"c1","name":"nope","input":{"a":[1,null]}}\n\n'
    b'id: 5\nevent: tool_result\ndata: {"id":"c1","name":"nope","status":"ok","result":{"ok":true}}\n\n'
    b'id: 6\nevent: effects\ndata: [{"type":"note.written","id":3}]\n\n'
    b'id: 7\nevent: done\ndata: {"message_id":7,"stop_reason":"end_turn","usage":{"input_tokens":1}}\n\n'
)


def test_an_event_trimmed_off_the_bus_is_a_keep_alive_in_its_place():
    copy = Copy(hub.TurnChannel("t"))
    Reader(bus=None).apply(
        copy,
        [
            (b"0-1", {b"e": b"start"}),
            (b"1-0", {b"e": b"token", b"d": b'{"text":"a"}'}),
            (b"1-2", {b"e": b"token", b"d": b'{"text":"c"}'}),  # (1-1 was trimmed away)
            (b"1-3", {b"e": b"done", b"d": b'{"message_id":null,"stop_reason":"end_turn","usage":{}}'}),
        ],
    )
    items = [(i, name, payload) for i, (name, payload) in enumerate(copy.channel.since(0))]
    assert copy.channel.closed
    assert b"".join(_json_events(iter([items]))) == (
        b'id: 0\nevent: token\ndata: {"text":"a"}\n\n'
        b": keep-alive\n\n"
        b'id: 2\nevent: token\ndata: {"text":"c"}\n\n'
        b'id: 3\nevent: done\ndata: {"message_id":null,"stop_reason":"end_turn","usage":{}}\n\n'
    )


def test_an_event_of_a_kind_this_version_does_not_know_passes_as_before():
    """A newer worker may publish a kind this one lacks (a rolling deploy): the JSON flavour sends it
    as it came, the HTML flavour sends nothing for it, and what a client had is gathered without it."""
    newer = (4, "newer", {"a": 1})
    assert b"".join(_json_events(iter([[newer]]))) == b'id: 4\nevent: newer\ndata: {"a":1}\n\n'
    assert b"".join(_html_events(iter([[newer]]), turn=None)) == b""
    assert Sent.of([("token", {"text": "a"}), ("newer", {"a": 1}), ("token", {"text": "b"})]).units == [("token", "ab")]
