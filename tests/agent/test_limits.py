"""Per-turn limits: calls past them get an error result the model reads, and never run (agent/limits.py)."""

from __future__ import annotations

import pytest

from agent.backends import get_backend
from agent.limits import TOO_MANY_CALLS, TOO_MANY_CHANGES
from agent.models import Approval
from agent.tools import register, unregister
from tests.agent.test_api_turns import assert_transcript_valid

pytestmark = pytest.mark.django_db

TOOL_STOP = {"kind": "done", "stop_reason": "tool_use"}
DONE = {"kind": "done", "stop_reason": "end_turn"}


def call(name, id, input=None):
    return {"kind": "tool_use", "id": id, "name": name, "input": input or {}}


@pytest.fixture
def ran(settings):
    """`change` writes (the default), `look` only reads, `risky` writes and waits for a person."""
    settings.AGENT_CONFIRM_TOOLS = ["risky"]
    log = []
    register("change", description="Changes a thing")(lambda session: log.append("change") or {"ok": True})
    register("look", description="Reads a thing", writes=False)(lambda session: log.append("look") or {"ok": True})
    register("risky", description="Needs a person")(lambda session: log.append("risky") or {"ok": True})
    yield log
    for name in ("change", "look", "risky"):
        unregister(name)


def results(events):
    return {p["id"]: p for n, p in events if n == "tool_result"}


def sent_results(index):
    """The tool results the model was sent with its `index`-th call (0-based)."""
    messages = get_backend("fake").requests[index]["messages"]
    return {
        p["tool_use_id"]: p["result"]
        for m in messages
        if m["role"] == "tool"
        for p in m["parts"]
        if p["type"] == "tool_result"
    }


def test_one_answer_runs_at_most_the_per_answer_limit_and_the_rest_get_an_error(api, chat, script, ran, settings):
    settings.AGENT_MAX_TOOL_CALLS_PER_ANSWER = 16
    script([[*(call("look", f"c{i}") for i in range(1, 21)), TOOL_STOP], [{"kind": "text", "text": "ok"}, DONE]])
    events = api.turn(chat, "look at everything")
    assert ran == ["look"] * 16
    got = results(events)
    assert [got[f"c{i}"]["status"] for i in range(1, 21)] == ["ok"] * 16 + ["error"] * 4
    assert got["c17"]["result"] == {"error": TOO_MANY_CALLS.format(limit=16, n=17)}
    assert sent_results(1)["c20"] == {"error": TOO_MANY_CALLS.format(limit=16, n=20)}  # the model reads why
    assert events[-1][0] == "done"
    assert_transcript_valid(chat)


def test_a_turn_makes_at_most_the_mutation_limit_across_its_answers(api, chat, script, ran, settings):
    settings.AGENT_MAX_MUTATIONS_PER_TURN = 8
    answers = [
        [*(call("change", f"a{k}-{i}") for i in range(5)), call("look", f"a{k}-look"), TOOL_STOP] for k in (1, 2)
    ]
    # (the fake's k-th call answers the session's k-th model call: the next turn's calls follow on)
    script([*answers, [{"kind": "text", "text": "done"}, DONE], [call("change", "b1"), TOOL_STOP], [DONE]])
    events = api.turn(chat, "change many things")
    assert ran.count("change") == 8 and ran.count("look") == 2  # reading is never refused
    got = results(events)
    refused = [i for i, p in got.items() if p["status"] == "error"]
    assert refused == ["a2-3", "a2-4"]
    assert got["a2-3"]["result"] == {"error": TOO_MANY_CHANGES.format(limit=8)}
    assert sent_results(2)["a2-4"] == {"error": TOO_MANY_CHANGES.format(limit=8)}
    assert events[-1][0] == "done"
    assert_transcript_valid(chat)
    # The limit is per turn: the next message starts afresh.
    ran.clear()
    api.turn(chat, "one more")
    assert ran == ["change"]


def test_a_call_waiting_for_a_person_counts_and_one_past_the_limit_is_never_offered_for_approval(
    api, chat, script, ran, settings
):
    settings.AGENT_MAX_MUTATIONS_PER_TURN = 2
    script([[call("change", "c1"), call("risky", "r1"), call("risky", "r2"), TOOL_STOP]])
    events = api.turn(chat, "do risky things")
    assert ran == ["change"]
    assert [a["id"] for a in events[-1][1]["approvals"]] == [str(Approval.objects.get(tool_use_id="r1").pk)]
    assert results(events)["r2"]["result"] == {"error": TOO_MANY_CHANGES.format(limit=2)}
    assert not Approval.objects.filter(tool_use_id="r2").exists()


def test_zero_turns_the_limits_off(api, chat, script, ran, settings):
    settings.AGENT_MAX_MUTATIONS_PER_TURN = 0
    settings.AGENT_MAX_TOOL_CALLS_PER_ANSWER = 0
    script([[*(call("change", f"c{i}") for i in range(30)), TOOL_STOP], [DONE]])
    events = api.turn(chat, "go")
    assert ran == ["change"] * 30
    assert all(p["status"] == "ok" for p in results(events).values())
