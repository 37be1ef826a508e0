"""How messages are appended: in order, whole (never without their parts), with few queries."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent import turns
from agent.models import Message, Part, Session
from agent.transcript import add_message

pytestmark = pytest.mark.django_db

DONE = {"kind": "done", "stop_reason": "end_turn"}


def positions(session):
    return list(Message.objects.filter(session=session).order_by("position").values_list("position", "role"))


def test_a_message_is_never_stored_without_its_parts(chat):
    with pytest.raises(KeyError):
        add_message(chat, "assistant", [{"type": "text", "text": "fine"}, {"type": "tool_result"}])  # no tool_use_id
    assert not Message.objects.filter(session=chat).exists()
    assert not Part.objects.exists()
    # and the next message still goes where it belongs
    add_message(chat, "user", [{"type": "text", "text": "hello"}])
    assert positions(chat) == [(0, "user")]


def test_within_a_turn_the_next_position_is_known_without_asking(chat, script):
    script([[{"kind": "text", "text": "hi"}, DONE]])
    turn, _ = turns.begin(chat, "hello")
    with CaptureQueriesContext(connection) as ctx:
        add_message(chat, "assistant", [{"type": "text", "text": "hi"}], turn=turn)
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

    third, _ = turns.begin(chat, "third")  # the first object again, its cached position now stale
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
    turn, _ = turns.begin(chat, "hello")
    with CaptureQueriesContext(connection) as ctx:
        turns.execute(turn)
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
        turn, _ = turns.begin(chat, "go")
        with CaptureQueriesContext(connection) as ctx:
            turns.execute(turn)
        second = get_backend().requests[1]["messages"]
        assert second == build_neutral_messages(Session.objects.get(pk=chat.pk))[:-1]
        assert sum('FROM "agent_contextsummary"' in q["sql"] for q in ctx.captured_queries) == 1
    finally:
        unregister("echo")


def _counts_of_messages(queries):
    return [q["sql"] for q in queries if "COUNT(" in q["sql"].upper() and 'FROM "agent_message"' in q["sql"]]


@pytest.mark.parametrize("uses_call_index", [True, False])
def test_the_call_index_is_read_with_the_transcript_and_counted_only_after_a_summary(
    chat, script, monkeypatch, uses_call_index
):
    """The fake and the demo pick their reply by the call's place in the session. The turn's read of
    the whole transcript tells it; once a summary stands for the older part, a COUNT does, and only
    for such a backend (a real provider's turn never counts)."""
    from agent.backends.fake import FakeBackend
    from agent.models import ContextSummary

    monkeypatch.setattr(FakeBackend, "uses_call_index", uses_call_index)
    script([[{"kind": "text", "text": f"reply {i}"}, DONE] for i in range(3)])

    def turn(text):
        t, _ = turns.begin(Session.objects.get(pk=chat.pk), text)
        with CaptureQueriesContext(connection) as ctx:
            turns.execute(t)
        last = Part.objects.filter(message__session=chat, message__role="assistant").order_by("-message__position")
        return len(_counts_of_messages(ctx.captured_queries)), last.first().text

    assert turn("hello") == (0, "reply 0")
    assert turn("again") == (0, "reply 1")  # the second call of the session: known from the read
    ContextSummary.objects.create(session=chat, up_to_position=1, text="They said hello.")
    counted, reply = turn("and again")
    assert counted == (1 if uses_call_index else 0)
    if uses_call_index:
        assert reply == "reply 2"  # the third call, although the context holds one reply of the two
    assert [role for _, role in positions(chat)] == ["user", "assistant"] * 3


def test_a_turn_stores_its_user_message_with_its_end_not_with_an_update_at_its_start(chat, script):
    from agent.models import Turn

    script([[{"kind": "text", "text": "hi"}, DONE]])
    with CaptureQueriesContext(connection) as ctx:
        turn, message = turns.begin(chat, "hello")
    assert not [q["sql"] for q in ctx.captured_queries if q["sql"].startswith('UPDATE "agent_turn"')]
    assert message.turn_id == turn.pk  # the message names its turn from the start
    turns.execute(turn)
    stored = Turn.objects.get(pk=turn.pk)
    assert stored.user_message_id == message.pk and stored.status == "done"


def _end_reads(queries):
    """Reads of where the transcript ends: its last message by position."""
    return [q["sql"] for q in queries if 'ORDER BY "agent_message"."position" DESC' in q["sql"]]


def test_a_turn_knows_where_the_transcript_ends_from_the_lease_it_took(chat, script):
    """A new session starts at 0, each turn's end records where it stopped, and the UPDATE that
    takes the lease proves the session object's figure current: no read of the last message at a turn's start."""
    script([[{"kind": "text", "text": "one"}, DONE], [{"kind": "text", "text": "two"}, DONE]])
    for text in ("first", "second"):
        fresh = Session.objects.get(pk=chat.pk)  # as the next request loads it
        with CaptureQueriesContext(connection) as ctx:
            turn, _ = turns.begin(fresh, text)
        assert _end_reads(ctx.captured_queries) == []
        turns.execute(turn)
    assert positions(chat) == [(0, "user"), (1, "assistant"), (2, "user"), (3, "assistant")]
    assert Session.objects.get(pk=chat.pk).next_position == 4


def test_a_message_written_outside_a_turn_makes_the_end_unknown_so_the_next_turn_asks(chat, script):
    script([[{"kind": "text", "text": "one"}, DONE], [{"kind": "text", "text": "two"}, DONE]])
    turn, _ = turns.begin(Session.objects.get(pk=chat.pk), "first")
    turns.execute(turn)
    loaded = Session.objects.get(pk=chat.pk)  # says 2
    add_message(chat, "user", [{"type": "text", "text": "imported"}])  # no turn: e.g. a data import
    assert Session.objects.get(pk=chat.pk).next_position is None
    with CaptureQueriesContext(connection) as ctx:
        turn, _ = turns.begin(loaded, "second")  # its figure is stale: the lease's UPDATE does not prove it
    assert len(_end_reads(ctx.captured_queries)) == 1
    turns.execute(turn)
    assert positions(chat) == [(0, "user"), (1, "assistant"), (2, "user"), (3, "user"), (4, "assistant")]


def test_a_session_from_before_the_counter_asks_the_transcript(chat, script):
    script([[{"kind": "text", "text": "one"}, DONE]])
    add_message(chat, "user", [{"type": "text", "text": "old"}])
    add_message(chat, "assistant", [{"type": "text", "text": "older reply"}])
    Session.objects.filter(pk=chat.pk).update(next_position=None)  # as the migration leaves old sessions
    turn, _ = turns.begin(Session.objects.get(pk=chat.pk), "new")
    turns.execute(turn)
    assert positions(chat) == [(0, "user"), (1, "assistant"), (2, "user"), (3, "assistant")]
    assert Session.objects.get(pk=chat.pk).next_position == 4


def test_one_read_tells_where_the_transcript_ends_and_what_the_latest_summary_covers(chat, django_assert_num_queries):
    """The session's row LEFT JOINed to its messages and parts: empty messages count for the end
    and the replies, a summary's coverage comes with the same read, JSON parts are decoded."""
    from agent.models import ContextSummary
    from agent.transcript import read_after, read_latest

    with django_assert_num_queries(1):
        empty = read_latest(chat)
    assert (empty.pairs, empty.end, empty.replies, empty.summary_to, empty.awaiting_people) == ([], 0, 0, None, False)

    add_message(chat, "user", [{"type": "text", "text": "hi"}])
    add_message(chat, "assistant", [{"type": "tool_use", "id": "t1", "name": "look", "input": {"q": [1, "é"]}}])
    add_message(chat, "tool", [{"type": "tool_result", "tool_use_id": "t1", "name": "look", "result": {"n": 2}}])
    add_message(chat, "assistant", [])  # an answer with nothing in it (stopped before any output)
    with django_assert_num_queries(1):
        whole = read_latest(chat)
    assert [(position, m["role"]) for position, m in whole.pairs] == [(0, "user"), (1, "assistant"), (2, "tool")]
    assert whole.pairs[1][1]["parts"] == [{"type": "tool_use", "id": "t1", "name": "look", "input": {"q": [1, "é"]}}]
    assert whole.pairs[2][1]["parts"][0]["result"] == {"n": 2}
    assert (whole.end, whole.replies, whole.summary_to) == (4, 2, None)  # the empty answer counts

    ContextSummary.objects.create(session=chat, up_to_position=1, text="older")
    ContextSummary.objects.create(session=chat, up_to_position=0, text="oldest")
    latest = read_latest(chat)
    assert ([p for p, _ in latest.pairs], latest.end, latest.replies, latest.summary_to) == ([2], 4, 1, 1)
    assert ([p for p, _ in read_after(chat, 2).pairs], read_after(chat, 2).end) == ([], 4)
    ContextSummary.objects.create(session=chat, up_to_position=3, text="all of it")
    assert read_latest(chat)[1:4] == (4, 0, 3)  # nothing after the summary: the end is after what it covers
    chat.awaiting_people = True
    chat.save(update_fields=["awaiting_people"])
    assert read_latest(chat).awaiting_people and read_after(chat, -1).awaiting_people
