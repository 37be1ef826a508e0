"""How messages are appended: in order, whole (never without their parts), with few queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent import turns
from agent.models import Message, Part, Session
from agent.state import Run
from agent.transcript import add_message

pytestmark = pytest.mark.django_db

DONE = {"kind": "done", "stop_reason": "end_turn"}


def positions(session):
    return list(Message.objects.filter(session=session).order_by("position").values_list("position", "role"))


def test_a_message_is_never_stored_without_its_parts(chat):
    with pytest.raises(KeyError):
        add_message(Run(chat), "assistant", [{"type": "text", "text": "fine"}, {"type": "tool_result"}])  # no id
    assert not Message.objects.filter(session=chat).exists()
    assert not Part.objects.exists()
    # and the next message still goes where it belongs
    add_message(Run(chat), "user", [{"type": "text", "text": "hello"}])
    assert positions(chat) == [(0, "user")]


def test_within_a_turn_the_next_position_is_known_without_asking(chat, script):
    script([[{"kind": "text", "text": "hi"}, DONE]])
    run, _ = turns.begin(chat, "hello")
    with CaptureQueriesContext(connection) as ctx:
        add_message(run, "assistant", [{"type": "text", "text": "hi"}])
    assert _end_reads(ctx.captured_queries) == []
    assert positions(chat) == [(0, "user"), (1, "assistant")]


def test_a_session_object_kept_across_turns_asks_again_when_a_new_turn_starts(chat, script):
    """Another request (another worker) may have added messages since: each new lease re-reads the end."""
    script(
        [
            [{"kind": "text", "text": "one"}, DONE],
            [{"kind": "text", "text": "two"}, DONE],
            [{"kind": "text", "text": "three"}, DONE],
        ]
    )
    first, _ = turns.begin(chat, "first")
    turns.execute(first)

    elsewhere = Session.objects.get(pk=chat.pk)  # what another request would load
    second, _ = turns.begin(elsewhere, "second")
    turns.execute(second)

    third, _ = turns.begin(chat, "third")  # the first object again
    turns.execute(third)
    assert positions(chat) == [
        (0, "user"),
        (1, "assistant"),
        (2, "user"),
        (3, "assistant"),
        (4, "user"),
        (5, "assistant"),
    ]


def test_a_turn_runs_from_the_objects_its_request_loaded(chat, script):
    """Passing the Turn (not its id) to the executor: no second load of turn, session or user."""
    script([[{"kind": "text", "text": "hi"}, DONE]])
    run, _ = turns.begin(chat, "hello")
    turn = run.turn
    with CaptureQueriesContext(connection) as ctx:
        turns.execute(run)
    loads = [
        q["sql"]
        for q in ctx.captured_queries
        if q["sql"].startswith("SELECT") and ('FROM "agent_turn"' in q["sql"] or 'FROM "auth_user"' in q["sql"])
    ]
    assert loads == []
    turn.refresh_from_db()
    assert turn.status == "done"


def test_the_second_call_of_a_round_trip_sees_what_a_fresh_read_gives(chat, script):
    """The context loaded once per run and kept in step equals the transcript read from the database."""
    from agent.backends import get_backend
    from agent.tools import register, unregister
    from agent.transcript import build_neutral_messages

    @register("echo", description="Echo", input_schema={"type": "object", "properties": {"x": {"type": "string"}}})
    def echo(session, x=""):
        return {"echo": x, "n": [1, 2], "_effects": [{"type": "x"}]}

    try:
        script(
            [
                [
                    {"kind": "reasoning", "text": "hm", "signature": "sig"},
                    {"kind": "text", "text": "Let me."},
                    {"kind": "tool_use", "id": "e1", "name": "echo", "input": {"x": "a"}},
                    {"kind": "tool_use", "id": "e2", "name": "nope", "input": {}},
                    {"kind": "done", "stop_reason": "tool_use"},
                ],
                [{"kind": "text", "text": "Done."}, DONE],
            ]
        )
        run, _ = turns.begin(chat, "go")
        with CaptureQueriesContext(connection) as ctx:
            turns.execute(run)
        second = get_backend().requests[1]["messages"]
        assert second == build_neutral_messages(Session.objects.get(pk=chat.pk))[:-1]
        assert sum('FROM "agent_contextsummary"' in q["sql"] for q in ctx.captured_queries) == 1
    finally:
        unregister("echo")


def _counts_of_messages(queries):
    return [q["sql"] for q in queries if "COUNT(" in q["sql"].upper() and 'FROM "agent_message"' in q["sql"]]


@pytest.mark.parametrize("uses_call_index", [True, False])
def test_the_call_index_is_counted_only_for_a_backend_that_reads_it(chat, script, monkeypatch, uses_call_index):
    """The fake and the demo pick their reply by the call's place in the session, summary or not;
    a real provider's turn never counts."""
    from agent.backends.fake import FakeBackend
    from agent.models import ContextSummary

    monkeypatch.setattr(FakeBackend, "uses_call_index", uses_call_index)
    script([[{"kind": "text", "text": f"reply {i}"}, DONE] for i in range(3)])

    def turn(text):
        run, _ = turns.begin(Session.objects.get(pk=chat.pk), text)
        with CaptureQueriesContext(connection) as ctx:
            turns.execute(run)
        last = Part.objects.filter(message__session=chat, message__role="assistant").order_by("-message__position")
        return len(_counts_of_messages(ctx.captured_queries)), last.first().text

    counted = 1 if uses_call_index else 0
    assert turn("hello") == (counted, "reply 0")
    assert turn("again") == (counted, "reply 1")
    ContextSummary.objects.create(session=chat, up_to_position=1, text="They said hello.")
    assert turn("and again")[0] == counted
    if uses_call_index:
        assert Part.objects.filter(message__role="assistant").order_by("-message__position").first().text == "reply 2"
    assert [role for _, role in positions(chat)] == ["user", "assistant"] * 3


def test_a_turn_stores_its_user_message_with_its_end_not_with_an_update_at_its_start(chat, script):
    from agent.models import Turn

    script([[{"kind": "text", "text": "hi"}, DONE]])
    with CaptureQueriesContext(connection) as ctx:
        run, message = turns.begin(chat, "hello")
    assert not [q["sql"] for q in ctx.captured_queries if q["sql"].startswith('UPDATE "agent_turn"')]
    assert message.turn_id == run.turn.pk  # the message names its turn from the start
    turns.execute(run)
    stored = Turn.objects.get(pk=run.turn.pk)
    assert stored.user_message_id == message.pk and stored.status == "done"


def _end_reads(queries):
    """Reads of where the transcript ends: the largest position of the session's messages."""
    return [q["sql"] for q in queries if q["sql"].startswith('SELECT MAX("position")')]


def test_a_message_written_outside_a_turn_is_followed_by_the_next_turn(chat, script):
    script([[{"kind": "text", "text": "one"}, DONE], [{"kind": "text", "text": "two"}, DONE]])
    run, _ = turns.begin(Session.objects.get(pk=chat.pk), "first")
    turns.execute(run)
    loaded = Session.objects.get(pk=chat.pk)
    add_message(Run(chat), "user", [{"type": "text", "text": "imported"}])  # no turn: e.g. a data import
    with CaptureQueriesContext(connection) as ctx:
        run, _ = turns.begin(loaded, "second")
    assert len(_end_reads(ctx.captured_queries)) == 1  # each turn asks where the transcript ends, once
    turns.execute(run)
    assert positions(chat) == [(0, "user"), (1, "assistant"), (2, "user"), (3, "user"), (4, "assistant")]


def test_one_read_gives_the_messages_after_a_position_with_their_parts(chat, django_assert_num_queries):
    """Messages without parts are skipped, JSON parts are decoded, and the read starts after `after`."""
    from agent.transcript import read_after

    with django_assert_num_queries(1):
        assert read_after(chat, -1) == []
    run = Run(chat)
    add_message(run, "user", [{"type": "text", "text": "hi"}])
    add_message(run, "assistant", [{"type": "tool_use", "id": "t1", "name": "look", "input": {"q": [1, "é"]}}])
    add_message(run, "tool", [{"type": "tool_result", "tool_use_id": "t1", "name": "look", "result": {"n": 2}}])
    add_message(run, "assistant", [])  # an answer with nothing in it (stopped before any output)
    with django_assert_num_queries(1):
        whole = read_after(chat, -1)
    assert [(position, m["role"]) for position, m in whole] == [(0, "user"), (1, "assistant"), (2, "tool")]
    assert whole[1][1]["parts"] == [{"type": "tool_use", "id": "t1", "name": "look", "input": {"q": [1, "é"]}}]
    assert whole[2][1]["parts"][0]["result"] == {"n": 2}
    assert [p for p, _ in read_after(chat, 1)] == [2]
    assert run.next_position == 4  # the empty answer still took its place
