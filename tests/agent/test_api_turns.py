"""The engine through the HTTP API with the fake backend."""

from __future__ import annotations

import logging

import pytest
from django.urls import resolve

from agent.backends import get_backend
from agent.loop import CALM, LASTING
from agent.models import Message, Part, Turn
from agent.tools import register, unregister

pytestmark = pytest.mark.django_db

DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}}


def tool_call(name, input, id="call_1"):
    return {"kind": "tool_use", "id": id, "name": name, "input": input}


@pytest.fixture
def tools():
    calls = []

    @register(
        "add",
        description="Add two numbers",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    )
    def add(session, a, b):
        calls.append(("add", a, b))
        return {"sum": a + b, "_effects": [{"type": "post.updated", "id": a}]}

    @register("boom", description="Always fails")
    def boom(session):
        calls.append(("boom",))
        raise RuntimeError("database password is hunter2")

    @register("listing", description="Returns a list")
    def listing(session):
        return [1, 2, 3]

    yield calls
    for name in ("add", "boom", "listing"):
        unregister(name)


def names(events):
    return [n for n, _ in events]


def test_plain_answer(api, chat, script):
    script([[{"kind": "text", "text": "Hel"}, {"kind": "text", "text": "lo"}, DONE]])
    events = api.turn(chat, "Hi")
    assert events == [
        ("token", {"text": "Hel"}),
        ("token", {"text": "lo"}),
        (
            "done",
            {
                "message_id": events[-1][1]["message_id"],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 0, "cache_write_tokens": 0},
            },
        ),
    ]
    body = api.transcript(chat)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]
    assert body["messages"][1]["parts"] == [{"type": "text", "text": "Hello"}]
    assert body["messages"][1]["id"] == events[-1][1]["message_id"]
    assert body["running"] is False


def test_one_tool_round_trip_effects_stripped_from_model(api, chat, script, tools):
    script(
        [
            [tool_call("add", {"a": 2, "b": 3}), {"kind": "done", "stop_reason": "tool_use"}],
            [{"kind": "text", "text": "It is 5."}, DONE],
        ]
    )
    events = api.turn(chat, "2+3?")
    assert names(events) == ["tool_use", "tool_result", "effects", "token", "done"]
    assert events[1][1] == {"id": "call_1", "name": "add", "status": "ok", "result": {"sum": 5}}
    assert events[2][1] == [{"type": "post.updated", "id": 2}]
    second_request = get_backend().requests[1]
    tool_msg = second_request["messages"][-1]
    assert tool_msg["role"] == "tool"
    assert tool_msg["parts"][0]["result"] == {"sum": 5}
    assert "_effects" not in str(second_request)
    assert [t["name"] for t in second_request["tools"]] == ["add", "boom", "listing"]
    assistant = Message.objects.filter(session=chat, role="assistant").first()
    assert assistant.tools_offered == ["add", "boom", "listing"]


def test_a_stream_served_from_the_transcript_replays_the_effects_too(api, chat, script, tools):
    """Another worker follows the turn from the database: the page still hears what changed."""
    from agent.follow import _from_database

    script(
        [
            [
                tool_call("add", {"a": 2, "b": 3}, id="c1"),
                tool_call("add", {"a": 4, "b": 1}, id="c2"),
                {"kind": "done", "stop_reason": "tool_use"},
            ],
            [{"kind": "text", "text": "Done."}, DONE],
        ]
    )
    live = api.turn(chat, "add twice")
    turn = Turn.objects.get(session=chat)
    replayed = [(n, p) for _, n, p in _from_database(Turn(pk=turn.pk, session=chat, status="running"), 15)]
    assert [(n, p) for n, p in replayed if n != "token"] == [(n, p) for n, p in live if n != "token"]
    assert ("effects", [{"type": "post.updated", "id": 2}, {"type": "post.updated", "id": 4}]) in replayed
    assert "effects" not in str(get_backend().requests[1]["messages"])  # stored, never sent to the model


def test_two_tools_in_one_call(api, chat, script, tools):
    script(
        [
            [
                tool_call("add", {"a": 1, "b": 1}, "c1"),
                tool_call("listing", {}, "c2"),
                {"kind": "done", "stop_reason": "tool_use"},
            ],
            [DONE],
        ]
    )
    events = api.turn(chat, "go")
    results = [p for n, p in events if n == "tool_result"]
    assert [(r["id"], r["result"]) for r in results] == [("c1", {"sum": 2}), ("c2", {"items": [1, 2, 3]})]
    tool_msgs = Message.objects.filter(session=chat, role="tool")
    assert tool_msgs.count() == 1
    assert [p.tool_use_id for p in tool_msgs[0].parts.all()] == ["c1", "c2"]


def test_tool_raises_then_model_recovers(api, chat, script, tools, caplog):
    script(
        [
            [tool_call("boom", {}), {"kind": "done", "stop_reason": "tool_use"}],
            [{"kind": "text", "text": "Sorry, that failed."}, DONE],
        ]
    )
    with caplog.at_level(logging.ERROR):
        events = api.turn(chat, "boom")
    result = events[1][1]
    assert result["status"] == "error"
    assert "hunter2" not in str(result) and "error" in result["result"]
    assert "hunter2" in caplog.text  # the operator sees the real exception
    assert names(events)[-2:] == ["token", "done"]


def test_unknown_tool(api, chat, script, tools):
    script([[tool_call("nope", {}), {"kind": "done", "stop_reason": "tool_use"}], [DONE]])
    events = api.turn(chat, "x")
    assert events[1][1]["result"] == {"error": "Unknown tool 'nope'."}
    assert events[1][1]["status"] == "error"


def test_schema_violation_and_bad_json_never_call_handler(api, chat, script, tools):
    script(
        [
            [
                tool_call("add", {"a": "two", "b": 1}, "c1"),
                {"kind": "tool_use", "id": "c2", "name": "add", "input": {}, "input_error": "Expecting value"},
                {"kind": "done", "stop_reason": "tool_use"},
            ],
            [DONE],
        ]
    )
    events = api.turn(chat, "x")
    results = [p for n, p in events if n == "tool_result"]
    assert results[0]["result"] == {"error": "Invalid input at a: 'two' is not of type 'integer'"}
    assert results[1]["status"] == "error" and "not valid JSON" in results[1]["result"]["error"]
    assert tools == []


def test_cycle_ceiling(api, chat, script, tools, settings):
    settings.AGENT_MAX_TOOL_CYCLES = 3
    loop_call = [tool_call("listing", {}), {"kind": "done", "stop_reason": "tool_use"}]
    script([loop_call] * 5)
    events = api.turn(chat, "loop")
    assert events[-1][0] == "error"
    assert events[-1][1]["code"] == "tool_cycle_limit"
    assert Message.objects.filter(session=chat, role="assistant").count() == 3
    assert_transcript_valid(chat)
    # The session is free for the next turn.
    assert api.send(chat, "again").status_code == 202


def assert_transcript_valid(session):
    used = set(Part.objects.filter(message__session=session, type="tool_use").values_list("tool_use_id", flat=True))
    answered = set(
        Part.objects.filter(message__session=session, type="tool_result").values_list("tool_use_id", flat=True)
    )
    assert used == answered


@pytest.mark.parametrize(
    "failure, sentence",
    [
        ({"message": "upstream 503 secret-detail", "retryable": True}, CALM["provider_error"]),
        ({"message": "upstream 401 secret-detail", "retryable": False}, LASTING["refused"]),
    ],
    ids=["retryable", "lasting"],
)
@pytest.mark.parametrize("after_tokens", [False, True])
def test_backend_error_calm_event_log_valid_transcript(api, chat, script, caplog, after_tokens, failure, sentence):
    first = ([{"kind": "text", "text": "Partial "}] if after_tokens else []) + [{"kind": "error", **failure}]
    script([first, [{"kind": "text", "text": "Recovered"}, DONE]])
    with caplog.at_level(logging.ERROR):
        events = api.turn(chat, "hi")
    assert events[-1] == ("error", {"code": "provider_error", "message": sentence})
    failed_call = next(r for r in caplog.records if "secret-detail" in r.getMessage())
    assert (str(failed_call.session_id), str(failed_call.turn_id)) == (
        str(chat.pk),
        str(Turn.objects.get(session=chat).pk),
    )
    assert "secret-detail" not in str(events)
    failed = Message.objects.filter(session=chat, role="assistant").get()
    assert failed.stop_reason == "error"
    assert [p.text for p in failed.parts.all()] == (["Partial "] if after_tokens else [])
    assert Turn.objects.get(session=chat).status == "error"
    events = api.turn(chat, "again")
    assert events[0] == ("token", {"text": "Recovered"})
    # The failed empty message is skipped when the next call's transcript is built.
    sent = get_backend().requests[-1]["messages"]
    assert [m["role"] for m in sent] == (["user", "assistant", "user"] if after_tokens else ["user", "user"])


def test_turn_in_progress(api, chat, script):
    from agent.turns import claim

    claim(chat)
    response = api.send(chat, "hello")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "turn_in_progress"
    assert not Message.objects.filter(session=chat).exists()


def test_a_message_refused_as_still_answering_costs_no_rate_slot(api, chat, script, settings):
    """Sent while the assistant is still answering, the message is refused (409) and nothing of it is
    kept: not its rate slot either. Was: the slot stayed taken, so a person who sent twice during a
    long answer had, under AGENT_MESSAGES_PER_MINUTE, fewer messages left for the minute."""
    from agent.models import RateEvent
    from agent.turns import claim

    settings.AGENT_MESSAGES_PER_MINUTE = 5
    claim(chat)
    for _ in range(3):
        assert api.send(chat, "hello").json()["error"]["code"] == "turn_in_progress"
    assert not RateEvent.objects.filter(user=chat.user).exists()


def test_a_message_that_cannot_be_stored_leaves_the_chat_free_for_the_next(api, chat, script, monkeypatch):
    """The user's message fails to write after the lease was taken: the turn ends as an error and
    gives the lease back, so sending again works at once (not "still answering" for two minutes)."""
    from agent import turns

    def fails(*args, **kwargs):
        raise RuntimeError("database is locked")

    monkeypatch.setattr(turns, "add_message", fails)
    with pytest.raises(RuntimeError):
        api.send(chat, "first")
    monkeypatch.undo()
    chat.refresh_from_db()
    assert chat.turn_id is None and chat.lease_until is None
    assert list(Turn.objects.filter(session=chat).values_list("status", flat=True)) == ["error"]
    assert not Message.objects.filter(session=chat).exists()
    script([[{"kind": "text", "text": "ok"}, DONE]])
    assert api.turn(chat, "again")[-1][0] == "done"


def test_expired_lease_is_reclaimed_and_orphans_answered(api, chat, script):
    from datetime import timedelta

    from django.utils import timezone

    from agent.models import Session
    from agent.transcript import add_message
    from agent.turns import claim

    dead = claim(chat)
    add_message(dead, "user", [{"type": "text", "text": "first"}])
    add_message(dead, "assistant", [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}])
    assert api.transcript(chat)["running"] is True
    Session.objects.filter(pk=chat.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    shown = api.transcript(chat)  # its worker died: nothing runs, though nobody has reclaimed it yet
    assert shown["running"] is False and "stream_url" not in shown
    script([[{"kind": "text", "text": "ok"}, DONE]])
    events = api.turn(chat, "hello again")
    assert events[-1][0] == "done"
    dead.turn.refresh_from_db()
    assert dead.turn.status == "error"
    assert_transcript_valid(chat)


def test_a_stream_is_found_only_under_its_own_users_own_session(api, chat, script, user, other_user):
    from agent.models import Session
    from tests.conftest import ApiClient

    script([[{"kind": "text", "text": "hi"}, DONE]])
    url = api.send(chat, "hello").json()["stream_url"]
    turn_id = resolve(url).kwargs["turn_id"]
    assert ApiClient(other_user).get(url).status_code == 404
    mine_too = Session.objects.create(user=user)
    response = api.get(f"/api/agent/sessions/{mine_too.pk}/turns/{turn_id}/stream")
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    assert api.get(url).status_code == 200


def test_other_users_session_is_404(api, script, other_user):
    from agent.models import Session

    theirs = Session.objects.create(user=other_user)
    assert api.send(theirs, "hi").status_code == 404
    assert api.get(f"/api/agent/sessions/{theirs.pk}").status_code == 404
    assert api.post(f"/api/agent/sessions/{theirs.pk}/stop").status_code == 404


@pytest.mark.parametrize(
    "raw",
    [
        b"{}",
        b'{"text": ""}',
        b'{"text": "   "}',
        b'{"text": 5}',
        b'{"text": null}',
        b"not json",
        b"[1]",
        ('{"text": "' + "x" * 20001 + '"}').encode(),
    ],
)
def test_bad_message(api, chat, script, raw):
    response = api.post(f"/api/agent/sessions/{chat.pk}/messages", raw=raw)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_message"
    assert not Message.objects.filter(session=chat).exists()


def test_exactly_20000_chars_is_accepted(api, chat, script):
    assert api.send(chat, "x" * 20000).status_code == 202


def test_the_limit_counts_characters_as_typed_a_line_break_once_an_astral_one_once(api, chat, script):
    """A browser sends each line break of a textarea as CR LF, which its maxlength counted once; an
    emoji outside the BMP is one character however JSON escapes it (two UTF-16 units)."""
    url = f"/api/agent/sessions/{chat.pk}/messages"
    typed = "é\r\n" * 10_000  # 20,000 characters in the textarea
    sent = api.client.post(url, data={"text": typed}, HTTP_X_CSRFTOKEN=api.csrf)
    assert sent.status_code == 202, sent.content
    api.events(sent.json()["stream_url"])
    assert api.send(chat, "🌧" * 20_000).status_code == 202
    over = api.client.post(url, data={"text": "é\r\n" * 10_000 + "x"}, HTTP_X_CSRFTOKEN=api.csrf)
    assert over.status_code == 400


def test_reopening_finished_stream_does_not_call_model(api, chat, script):
    script([[{"kind": "text", "text": "once"}, DONE]])
    response = api.send(chat, "hi")
    url = response.json()["stream_url"]
    first = api.events(url)
    calls = len(get_backend().requests)
    again = api.events(url)
    assert again == [first[-1]]
    assert len(get_backend().requests) == calls


def test_csrf_required(user, chat, script):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    response = client.post(
        f"/api/agent/sessions/{chat.pk}/messages", data='{"text": "hi"}', content_type="application/json"
    )
    assert response.status_code == 403
    assert not Message.objects.filter(session=chat).exists()


def test_anonymous_gets_401(client, chat):
    response = client.get(f"/api/agent/sessions/{chat.pk}")
    assert response.status_code == 401
