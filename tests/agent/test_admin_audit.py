"""The transcript admin's filters for an auditor's questions: which chats called a tool, and how its
calls ended (a result that succeeded or failed; a call a person rejected or left unanswered)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agent.models import Approval, Message, Part, Session
from agent.state import Run
from agent.transcript import add_message

pytestmark = pytest.mark.django_db


def call(session: Session, name: str, status: str = "ok", *, call_id: str = "", decided: str = "") -> Message:
    """One call of `name` in `session` and its result (`status`); with `decided`, put to a person
    first, who decided it so (an approval's status). Returns the call's message."""
    run = Run(session)
    call_id = call_id or f"call_{Message.objects.count()}"
    asked = add_message(run, "assistant", [{"type": "tool_use", "id": call_id, "name": name, "input": {}}])
    if decided:
        Approval.objects.create(
            session=session,
            message=asked,
            tool_use_id=call_id,
            tool_name=name,
            status=decided,
            resolved=True,
            expires_at=timezone.now() + timedelta(minutes=15),
        )
    result: dict[str, Any] = {"error": "no"} if status == "error" else {"done": True}
    add_message(
        run, "tool", [{"type": "tool_result", "tool_use_id": call_id, "name": name, "result": result, "status": status}]
    )
    return asked


def chat(user, said: str) -> Session:
    session = Session.objects.create(user=user, purpose="chat")
    add_message(Run(session), "user", [{"type": "text", "text": said}])
    return session


def listed(auditor: Client, query: str = "", path: str = "session") -> list[str]:
    """The primary keys of the rows the changelist shows, in order (each once per row)."""
    response = auditor.get(f"/admin/agent/{path}/{query}")
    assert response.status_code == 200
    return [str(obj.pk) for obj in response.context["cl"].result_list]


def choices(auditor: Client, title: str, path: str = "session", query: str = "") -> list[str]:
    """The choices a list filter offers, "All" first."""
    response = auditor.get(f"/admin/agent/{path}/{query}")
    for spec in response.context["cl"].filter_specs:
        if spec.title == title:
            return [str(c["display"]) for c in spec.choices(response.context["cl"])]
    raise AssertionError(f"no filter {title!r}")


@pytest.fixture
def chats(user):
    """Four chats: one that wrote and deleted notes (two deletes), one whose delete a person rejected,
    one whose call failed and one a retired tool (no longer registered) answered, and one with no call."""
    wrote = chat(user, "write and delete")
    call(wrote, "write_note")
    call(wrote, "delete_note", decided=Approval.APPROVED)
    call(wrote, "delete_note", decided=Approval.APPROVED)
    refused = chat(user, "delete it")
    call(refused, "delete_note", "error", decided=Approval.REJECTED)
    lapsed = chat(user, "read it, then delete it")
    call(lapsed, "read_note", "error")
    call(lapsed, "retired_tool")
    call(lapsed, "delete_note", "error", decided=Approval.EXPIRED)
    quiet = chat(user, "hello")
    return {"wrote": wrote, "refused": refused, "lapsed": lapsed, "quiet": quiet}


def ids(*sessions: Session) -> list[str]:
    return sorted(str(s.pk) for s in sessions)


def test_the_tool_filter_lists_the_tools_the_transcripts_called(auditor, chats):
    """From the data (a tool no longer registered too), each name once, in order."""
    assert choices(auditor, "tool called") == ["All", "delete_note", "read_note", "retired_tool", "write_note"]


def test_chats_are_found_by_a_tool_they_called_each_once(auditor, chats):
    assert sorted(listed(auditor, "?tool=delete_note")) == ids(chats["wrote"], chats["refused"], chats["lapsed"])
    assert listed(auditor, "?tool=write_note") == [str(chats["wrote"].pk)]  # (once, for its three calls)
    assert listed(auditor, "?tool=nothing_called") == []
    assert auditor.get("/admin/agent/session/?tool=delete_note").context["cl"].result_count == 3


def test_chats_are_found_by_how_a_call_ended(auditor, chats):
    assert choices(auditor, "tool outcome") == [
        "All",
        "succeeded",
        "failed or refused (an error result)",
        "rejected by a person",
        "not approved in time",
    ]
    assert sorted(listed(auditor, "?outcome=ok")) == ids(chats["wrote"], chats["lapsed"])
    assert sorted(listed(auditor, "?outcome=error")) == ids(chats["refused"], chats["lapsed"])
    assert listed(auditor, "?outcome=rejected") == [str(chats["refused"].pk)]
    assert listed(auditor, "?outcome=expired") == [str(chats["lapsed"].pk)]


def test_with_a_tool_chosen_the_outcome_is_that_tools_calls(auditor, chats):
    """An auditor's "every chat where the assistant deleted a post" is delete's calls that succeeded, not a chat where
    a delete was rejected and another call succeeded."""
    assert listed(auditor, "?tool=delete_note&outcome=ok") == [str(chats["wrote"].pk)]
    assert sorted(listed(auditor, "?tool=delete_note&outcome=error")) == ids(chats["refused"], chats["lapsed"])
    assert listed(auditor, "?tool=read_note&outcome=ok") == []
    assert listed(auditor, "?tool=read_note&outcome=rejected") == []
    assert listed(auditor, "?tool=delete_note&outcome=expired") == [str(chats["lapsed"].pk)]
    # the outcomes' counts ("Show counts") count that tool's calls too
    assert choices(auditor, "tool outcome", query="?_facets=1&tool=delete_note&outcome=ok") == [
        "All",
        "succeeded (1)",
        "failed or refused (an error result) (2)",
        "rejected by a person (1)",
        "not approved in time (1)",
    ]


def test_messages_are_found_by_their_tool_and_its_outcome(auditor, chats):
    """A message calls a tool or carries its result: with both filters, the results that ended so."""
    lapsed = chats["lapsed"]
    called = lapsed.messages.filter(role="assistant", parts__tool_name="delete_note").get()
    answered = lapsed.messages.filter(role="tool", parts__tool_name="delete_note").get()
    assert choices(auditor, "tool", path="message")[:2] == ["All", "delete_note"]
    shown = listed(auditor, f"?tool=delete_note&q={lapsed.pk}", path="message")
    assert sorted(shown) == sorted([str(called.pk), str(answered.pk)])
    assert listed(auditor, f"?tool=delete_note&outcome=error&q={lapsed.pk}", path="message") == [str(answered.pk)]
    assert listed(auditor, f"?outcome=expired&q={lapsed.pk}", path="message") == [str(called.pk)]


def test_the_filtered_list_of_chats_takes_the_same_queries_however_many_chats(
    auditor, user, django_assert_max_num_queries
):
    """One query for the tools' names, whatever the list's length; the filters are subqueries."""

    def more(count: int, start: int) -> None:
        for i in range(start, start + count):
            session = chat(user, f"chat {i}")
            call(session, f"tool_{i % 3}", "error" if i % 2 else "ok", decided=Approval.REJECTED)

    def queries(query: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert auditor.get(f"/admin/agent/session/{query}").status_code == 200
        return len(captured)

    more(3, 0)
    queries("")  # (the first request also reads the sign-in)
    few = {q: queries(q) for q in ("", "?tool=tool_1", "?outcome=error", "?tool=tool_1&outcome=rejected")}
    more(12, 3)
    for query, count in few.items():
        with django_assert_max_num_queries(count):
            body = auditor.get(f"/admin/agent/session/{query}").content.decode()
        assert "tool=tool_2" in body, query  # (the sidebar's choices are there)


def many_chats(user, count: int = 3000, tools: int = 40) -> None:
    """`count` chats of four messages: a question, a call of one of `tools` tools, its result (one in
    seven an error) and an answer; written in bulk (the plan, not the write path, is under test)."""
    sessions = Session.objects.bulk_create(Session(user=user, purpose="chat") for _ in range(count))
    roles = ["user", "assistant", "tool", "assistant"]
    messages = Message.objects.bulk_create(
        (Message(session=s, position=p, role=role) for s in sessions for p, role in enumerate(roles)), batch_size=2000
    )
    parts = []
    for i, message in enumerate(messages):
        name = f"tool_{(i // 4) % tools}"
        if message.position == 1:
            parts.append(Part(message=message, position=0, type="tool_use", tool_use_id="c", tool_name=name))
        elif message.position == 2:
            status = "error" if (i // 4) % 7 == 0 else "ok"
            parts.append(
                Part(
                    message=message, position=0, type="tool_result", tool_use_id="c", tool_name=name, tool_status=status
                )
            )
        else:
            parts.append(Part(message=message, position=0, type="text", text="hello"))
    Part.objects.bulk_create(parts, batch_size=2000)


def explained(sqls: list[str], *, analyze: bool = False) -> list[list[str]]:
    """Each query's plan: `EXPLAIN QUERY PLAN` on SQLite; on PostgreSQL `EXPLAIN`, after `ANALYZE` of the
    tables (the planner sees them as they are), with `analyze` run too (each node's rows and loops)."""
    plans = []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table in ("agent_session", "agent_message", "agent_part"):
                cursor.execute(f"ANALYZE {table}")
        for sql in sqls:
            if connection.vendor == "postgresql":
                options = "ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF" if analyze else "COSTS OFF"
                cursor.execute(f"EXPLAIN ({options}) " + sql)
                plans.append([row[0] for row in cursor.fetchall()])
            else:
                cursor.execute("EXPLAIN QUERY PLAN " + sql)
                plans.append([row[-1] for row in cursor.fetchall()])
    return plans


def list_queries(auditor: Client, query: str = "") -> list[str]:
    """The SQL of the chats' list's queries."""
    with CaptureQueriesContext(connection) as run:
        assert auditor.get(f"/admin/agent/session/{query}").status_code == 200
    return [q["sql"] for q in run.captured_queries]


def part_plans(auditor: Client, query: str) -> list[list[str]]:
    """The query plans of the changelist's queries that read parts by a tool's name or a result's status."""
    sqls = list_queries(auditor, query)
    return explained([sql for sql in sqls if '"tool_name"' in sql or '"tool_status"' in sql])


@pytest.mark.parametrize(
    ("query", "indexes"),
    [
        ("?tool=tool_7", {"agent_part_tool_use_name_idx": "tool_name"}),
        ("?outcome=error", {"agent_part_result_status_idx": "tool_status"}),
        (
            "?tool=tool_7&outcome=error",
            {"agent_part_tool_use_name_idx": "tool_name", "agent_part_result_status_idx": "tool_status"},
        ),
    ],
)
def test_the_audit_filters_read_calls_and_results_through_their_indexes(auditor, user, query, indexes):
    """The chats' filters walked every chat's messages and parts (SQLite, a correlated EXISTS) or read every
    part (PostgreSQL, a sequential scan), and the list of tool names, on every page of the list, read every
    part too. Calls by name and results by status have partial indexes (`Part.Meta.indexes`), and the
    chats' filters find the parts first, then their chats, so each is read through its index."""
    many_chats(user)
    expected = {
        "?tool=tool_7": 75,  # (3,000 chats over 40 tools)
        "?outcome=error": 429,  # (one tool in seven ends in an error: 3,000 / 7)
        "?tool=tool_7&outcome=error": 11,  # (chats 7, 287, 567...: tool_7 and one in seven)
    }
    assert auditor.get(f"/admin/agent/session/{query}").context["cl"].result_count == expected[query]
    names, *filtered = part_plans(auditor, query)
    assert filtered, names
    # Every read of the parts is by an index, and the filter's own through a partial one (both filters chosen:
    # either, by the planner's estimate; PostgreSQL finds the 11 erring calls of tool_7 by their index, then
    # checks each chat's call through its messages).
    if connection.vendor == "postgresql":
        assert any("agent_part_tool_use_name_idx" in line for line in names), names
        for plan in filtered:
            assert not any("Seq Scan on agent_part" in line for line in plan), plan
            conditions = [
                plan[i + 1]
                for i, line in enumerate(plan[:-1])
                for index in indexes
                if re.search(rf"Index Scan (using|on) {index}\b", line)
            ]
            assert any(column in line for line in conditions for column in indexes.values()), plan
    else:
        assert any("USING INDEX agent_part_tool_use_name_idx" in line for line in names), names
        for plan in filtered:
            assert not any(re.fullmatch(r"SCAN (agent_part|U\d)( .*)?", line) for line in plan), plan
            uses = [f"USING INDEX {index} ({column}=?" for index, column in indexes.items()]
            assert any(use in line for line in plan for use in uses), plan


def test_the_list_of_chats_reads_its_page_not_every_chat(auditor, user):
    """The unfiltered list, the one auditors open first, took 420 ms (SQLite) to 840 ms (PostgreSQL) at 30,000
    chats: every query of it was a `SELECT DISTINCT` (even with nothing searched), so its count computed every
    chat's first words to count them, and its page computed them for every chat, then sorted them all by
    `updated_at` to keep 100. The count now counts the chats, and the page is read in its order, latest
    activity first, through an index of its own (`agent_session_updated_idx`): the first words are read for
    the page's chats only."""
    many_chats(user)
    sqls = list_queries(auditor)
    counts = [sql for sql in sqls if "COUNT(" in sql]
    assert counts
    for sql in counts:
        assert "agent_part" not in sql and "DISTINCT" not in sql, sql
    [page] = [sql for sql in sqls if 'ORDER BY "agent_session"."updated_at" DESC' in sql]
    [plan] = explained([page], analyze=True)
    if connection.vendor == "postgresql":
        assert any(re.search(r"Index Scan (Backward )?using agent_session_updated_idx", line) for line in plan), plan
        assert not any("Seq Scan on agent_session" in line or "Sort Key: agent_session" in line for line in plan), plan
        # (no node, the first words' subquery included, runs more often than once a row of the page)
        assert max(int(loops) for loops in re.findall(r"loops=(\d+)", "\n".join(plan))) <= 100, plan
    else:
        assert "SCAN agent_session USING INDEX agent_session_updated_idx" in plan, plan
        assert not any("TEMP B-TREE" in line for line in plan), plan


def test_a_search_lists_each_chat_found_once_without_a_distinct_list(auditor, user):
    """A search reaching the messages' parts ("hello": twice in every chat) made Django list the chats
    `DISTINCT`, so the count computed every found chat's first words and the page sorted every found chat.
    The chats are found by their ids now: each once, counted plainly, the page read in order."""
    many_chats(user)
    response = auditor.get("/admin/agent/session/?q=hello")
    shown = [str(s.pk) for s in response.context["cl"].result_list]
    assert response.context["cl"].result_count == 3000
    assert len(shown) == len(set(shown)) == 100
    assert listed(auditor, "?q=nobody+said+this") == []
    sqls = list_queries(auditor, "?q=hello")
    counts = [sql for sql in sqls if "COUNT(" in sql]
    assert counts
    for sql in counts:
        assert "DISTINCT" not in sql and '"first_words"' not in sql, sql
    [page] = [sql for sql in sqls if 'ORDER BY "agent_session"."updated_at" DESC' in sql]
    assert "DISTINCT" not in page, page
