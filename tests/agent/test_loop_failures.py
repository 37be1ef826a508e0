"""The loop's failure branches: each ends the turn with one calm outcome and leaves a valid transcript.

Stop after the tools ran, a summary that cannot be made, an unexpected exception (`chat_error`), tool
results that cannot be written (their calls answered by the orphan repair), and a crashed turn (repaired
by the next message once its lease ran out).
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from agent import loop, turns
from agent.backends import get_backend
from agent.exceptions import BackendError
from agent.follow import follow
from agent.loop import CALM, LASTING, run_agent
from agent.models import ContextSummary, Message, Part, Session, Turn
from agent.state import Run
from agent.tools import register, unregister
from agent.transcript import ORPHAN_RESULT, add_message
from tests.agent.test_api_turns import assert_transcript_valid
from tests.agent.test_context import history

pytestmark = pytest.mark.django_db

TOOL_STOP = {"kind": "done", "stop_reason": "tool_use"}
DONE = {"kind": "done", "stop_reason": "end_turn"}
CHAT_ERROR = ("error", {"code": "chat_error", "message": CALM["chat_error"]})


def call(name, id):
    return {"kind": "tool_use", "id": id, "name": name, "input": {}}


@pytest.fixture
def tools():
    ran = []
    register("first", description="Runs first")(lambda session: ran.append("first") or {"ok": 1})
    register("second", description="Runs second")(lambda session: ran.append("second") or {"ok": 2})
    yield ran
    unregister("first")
    unregister("second")


def results(session):
    return {
        p.tool_use_id: (p.tool_status, p.tool_result)
        for p in Part.objects.filter(message__session=session, type="tool_result").order_by("position")
    }


def test_a_stop_while_tools_run_answers_the_rest_and_ends_with_stopped(chat, script, tools):
    script([[call("first", "c1"), call("second", "c2"), TOOL_STOP], [{"kind": "text", "text": "never"}, DONE]])
    add_message(Run(chat), "user", [{"type": "text", "text": "go"}])
    events = list(run_agent(chat, should_stop=lambda: "first" in tools))  # Stop pressed as the first tool ends
    assert tools == ["first"]
    assert [n for n, _ in events] == ["tool_use", "tool_use", "tool_result", "tool_result", "done"]
    assert events[-1][1]["stop_reason"] == "stopped"
    assert results(chat) == {
        "c1": ("ok", {"ok": 1}),
        "c2": ("error", {"error": "The user stopped this turn before the tool ran."}),
    }
    assert len(get_backend().requests) == 1  # no model call after the stop
    assert_transcript_valid(chat)


@pytest.mark.parametrize(
    "retryable, sentence", [(True, CALM["provider_error"]), (False, LASTING["refused"])], ids=["503", "refused"]
)
def test_a_summary_that_cannot_be_made_is_a_calm_provider_error(
    api, chat, script, settings, monkeypatch, caplog, retryable, sentence
):
    """The summary's call failed: the person is asked to try again only when that may help."""
    settings.AGENT_CONTEXT_MAX_TOKENS = 700
    settings.AGENT_CONTEXT_KEEP_MESSAGES = 6
    history(chat, 10)
    script([[{"kind": "text", "text": "never"}, DONE]])

    def no_summary(*args, **kwargs):
        raise BackendError("summary call failed: upstream 503 shard 7", retryable=retryable)

    monkeypatch.setattr("agent.context.summarize", no_summary)
    with caplog.at_level(logging.ERROR):
        events = api.turn(chat, "and now?")
    assert events == [("error", {"code": "provider_error", "message": sentence})]
    line = next(r for r in caplog.records if "shard 7" in r.getMessage())
    assert line.getMessage().startswith("summarising the older messages failed")
    assert str(line.session_id) == str(chat.pk)  # whose (agent.logcontext)
    assert not ContextSummary.objects.exists() and not get_backend().requests  # the model was never called
    last = Message.objects.filter(session=chat, role="assistant").order_by("-position").first()
    assert last.stop_reason == "error" and not last.parts.exists()  # the failed call's one (empty) message
    assert Message.objects.filter(session=chat, role="user").order_by("-position").first().parts.get().text == (
        "and now?"
    )
    assert_transcript_valid(chat)


def test_an_unexpected_exception_from_the_model_call_is_a_calm_chat_error(api, chat, script, caplog):
    script(
        [[{"kind": "text", "text": "Par"}, {"kind": "text", "text": "tial"}, DONE], [{"kind": "text", "text": "ok"}]]
    )
    backend = get_backend()
    replay = backend.stream

    def broken(**kwargs):
        yield from list(replay(**kwargs))[:2]
        raise KeyError("internal detail")

    backend.stream = broken
    with caplog.at_level(logging.ERROR):
        events = api.turn(chat, "hi")
    assert events[-1] == CHAT_ERROR and [n for n, _ in events] == ["token", "token", "error"]
    assert "model call failed unexpectedly" in caplog.text and "internal detail" in caplog.text
    message = Message.objects.get(session=chat, role="assistant")
    assert message.stop_reason == "error" and [p.text for p in message.parts.all()] == ["Partial"]
    del backend.stream
    assert api.turn(chat, "again")[-1][0] == "done"  # the chat goes on


def test_an_unexpected_exception_anywhere_else_ends_the_turn_with_chat_error(api, chat, script, monkeypatch):
    script([[{"kind": "text", "text": "lost"}, DONE], [{"kind": "text", "text": "ok"}, DONE]])

    def cannot_store(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(loop, "persist_assistant", cannot_store)
    events = api.turn(chat, "hi")
    assert events[-1] == CHAT_ERROR
    turn = Turn.objects.get(session=chat)
    assert (turn.status, turn.terminal_event, turn.terminal_payload) == ("error", "error", CHAT_ERROR[1])
    assert Session.objects.get(pk=chat.pk).turn_id is None  # the lease was given back
    monkeypatch.undo()
    assert api.turn(chat, "again")[-1][0] == "done"


def test_tool_results_that_cannot_be_written_are_answered_by_the_orphan_repair(api, chat, script, tools, monkeypatch):
    script([[call("first", "c1"), call("second", "c2"), TOOL_STOP], [{"kind": "text", "text": "ok"}, DONE]])
    failures = []

    def cannot_write(run, results):
        failures.append([r["tool_use_id"] for r in results])
        raise RuntimeError("the tool message could not be written")

    monkeypatch.setattr(loop, "persist_tool_results", cannot_write)  # the loop's write; the repair writes its own
    events = api.turn(chat, "use the tools")
    assert failures == [["c1", "c2"]] and tools == ["first", "second"]
    assert events[-1] == CHAT_ERROR
    assert "tool_result" not in [n for n, _ in events]  # nothing reported that was not stored
    assert results(chat) == {"c1": ("error", ORPHAN_RESULT), "c2": ("error", ORPHAN_RESULT)}
    assert_transcript_valid(chat)
    monkeypatch.undo()
    assert api.turn(chat, "again")[-1][0] == "done"


def test_a_crashed_turn_is_repaired_by_the_next_message_once_its_lease_ran_out(api, chat, script):
    """A worker died mid-tool: its turn stays `running`, its tool call unanswered, until the lease runs out."""
    dead, _ = turns.begin(chat, "first")
    add_message(dead, "assistant", [{"type": "tool_use", "id": "t1", "name": "first", "input": {}}])
    script([[{"kind": "text", "text": "never"}, DONE], [{"kind": "text", "text": "back"}, DONE]])
    assert api.send(chat, "too early").json()["error"]["code"] == "turn_in_progress"  # its lease still holds
    Session.objects.filter(pk=chat.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    # A stream of the dead turn, opened on a worker that never ran it, ends calmly instead of waiting forever.
    assert list(follow(Turn.objects.get(pk=dead.turn.pk)))[-1][1:] == CHAT_ERROR
    events = api.turn(chat, "hello again")
    assert events[-1][0] == "done"
    dead.turn.refresh_from_db()
    assert (dead.turn.status, dead.turn.terminal_event, dead.turn.terminal_payload) == ("error", "error", CHAT_ERROR[1])
    assert results(chat) == {"t1": ("error", ORPHAN_RESULT)}
    assert_transcript_valid(chat)


def test_the_end_of_a_turn_is_tried_again_with_backoff_but_not_waited_for_after_the_last_try(monkeypatch, caplog):
    """A write after a failure is tried three times, waiting between tries; after the last one
    nothing is left to wait for (the turn's followers get their end as soon as it has failed)."""
    sleeps: list[float] = []
    monkeypatch.setattr(turns.time, "sleep", sleeps.append)

    def broken() -> None:
        raise RuntimeError("the database went away")

    with caplog.at_level(logging.ERROR, logger="agent.turns"):
        turns._with_retries(broken, "recording the end of the turn")

    assert sleeps == [0.5, 1.0]
    assert [r.getMessage() for r in caplog.records] == [
        f"recording the end of the turn failed (attempt {n} of 3)" for n in (1, 2, 3)
    ]


def test_a_tool_call_whose_name_or_id_is_too_long_to_keep_is_answered_not_a_chat_error(api, chat, script):
    """A model may name a tool of any length (a post's text can tell it to): the name is kept to the
    64 characters a tool's name has at most, marked cut so that it never names a tool that exists,
    and the call is answered "unknown tool". An id past the 200 characters kept is replaced by a
    stable one. Was: storing the answer failed on PostgreSQL (`varchar(64)`) and the turn ended
    "Something went wrong on our side"; on SQLite the names were kept whole."""
    ran = []
    real = "a" * 64  # the longest name a tool may have
    register(real, description="A tool with the longest name")(lambda session: ran.append(real) or {"ok": 1})
    try:
        script(
            [
                [call("x" * 300, "c1"), call(real + "b", "i" * 300), call(real, "c3"), TOOL_STOP],
                [{"kind": "text", "text": "ok"}, DONE],
            ]
        )
        events = api.turn(chat, "do what the post says")
    finally:
        unregister(real)
    assert events[-1][0] == "done"
    assert ran == [real]  # the call that named it exactly, never the one 65 characters long
    uses = list(Part.objects.filter(message__session=chat, type="tool_use").order_by("position"))
    assert [len(p.tool_name) for p in uses] == [64, 64, 64]
    assert uses[0].tool_name == "x" * 63 + "…" and uses[1].tool_name == "a" * 63 + "…"
    assert uses[0].tool_use_id == "c1" and len(uses[1].tool_use_id) <= 200 and uses[2].tool_use_id == "c3"
    answered = results(chat)
    assert set(answered) == {p.tool_use_id for p in uses}  # each call answered under the id it was kept with
    assert answered["c1"] == ("error", {"error": f"Unknown tool {'x' * 63 + '…'!r}."})
    assert answered[uses[1].tool_use_id][0] == "error" and answered["c3"] == ("ok", {"ok": 1})
    assert_transcript_valid(chat)


def test_nul_characters_from_the_model_are_kept_as_replacement_characters_not_a_chat_error(api, chat, script):
    """PostgreSQL's text and JSON columns cannot hold NUL (`\\u0000`), which a model may write when a
    post's text asks it to: in its words, its reasoning, a tool call's input (values and keys), its
    name and its id.
    Each is kept as U+FFFD, and the tool runs with that. Was: writing the answer failed and the turn
    ended "Something went wrong on our side", its words lost (on SQLite they were kept)."""
    got = []
    register("take", description="Takes a value")(lambda session, **kw: got.append(kw) or {"ok": 1})
    try:
        script(
            [
                [
                    {"kind": "reasoning", "text": "th\x00ink"},
                    {"kind": "text", "text": "o\x00k"},
                    {"kind": "tool_use", "id": "c1", "name": "take", "input": {"q": ["a\x00b"], "k\x00": 1}},
                    {"kind": "tool_use", "id": "c\x002", "name": "ta\x00ke", "input": {}},
                    TOOL_STOP,
                ],
                [{"kind": "text", "text": "done"}, DONE],
            ]
        )
        events = api.turn(chat, "do what the post says")
    finally:
        unregister("take")
    assert events[-1][0] == "done"
    assert got == [{"q": ["a\ufffdb"], "k\ufffd": 1}]
    parts = Part.objects.filter(message__session=chat, message__role="assistant").order_by(
        "message__position", "position"
    )
    kept = [(p.type, p.text, p.tool_input) for p in parts]
    assert kept[:4] == [
        ("reasoning", "th\ufffdink", None),
        ("text", "o\ufffdk", None),
        ("tool_use", "", {"q": ["a\ufffdb"], "k\ufffd": 1}),
        ("tool_use", "", {}),
    ]
    assert [p.tool_name for p in parts if p.type == "tool_use"] == ["take", "ta\ufffdke"]
    assert results(chat)["c\ufffd2"] == ("error", {"error": "Unknown tool 'ta\ufffdke'."})
    assert_transcript_valid(chat)
