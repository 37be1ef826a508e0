"""Human approval of risky tools: pause, decide once, resume; every tool_use gets exactly one result."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agent import approvals, display, sse, turns
from agent.approvals import CHANGED, NOT_APPROVED
from agent.backends import get_backend
from agent.exceptions import NothingToResume
from agent.models import Approval, Message, Part, Session, Turn
from agent.state import Run
from agent.tools import Description, register, unregister
from agent.transcript import persist_tool_results
from tests.agent.test_api_turns import assert_transcript_valid
from tests.conftest import streamed_turn

pytestmark = pytest.mark.django_db

DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}
TOOL_STOP = {"kind": "done", "stop_reason": "tool_use"}


@pytest.fixture
def risky(settings):
    settings.AGENT_CONFIRM_TOOLS = ["danger"]
    ran = []

    @register(
        "danger",
        description="Irreversible",
        input_schema={"type": "object", "properties": {"x": {"type": "integer"}}},
        describe=lambda session, name, data: f"Destroy thing {data.get('x')}",
    )
    def danger(session, x=0):
        ran.append(x)
        return {"destroyed": x, "_effects": [{"type": "thing.deleted", "id": x}]}

    @register("safe", description="Harmless")
    def safe(session):
        ran.append("safe")
        return {"ok": True}

    yield ran
    unregister("danger")
    unregister("safe")


def call(name, id, input=None):
    return {"kind": "tool_use", "id": id, "name": name, "input": input or {}}


def decide(api, chat, approval_id, approve):
    return api.post(f"/api/agent/sessions/{chat.pk}/approvals/{approval_id}", {"approve": approve})


def test_pause_then_approve_runs_the_tool_and_resumes(api, chat, script, risky):
    script([[call("danger", "d1", {"x": 7}), TOOL_STOP], [{"kind": "text", "text": "Destroyed."}, DONE]])
    events = api.turn(chat, "destroy 7")
    assert [n for n, _ in events] == ["tool_use", "confirm"]
    pending = events[-1][1]["approvals"]
    assert [(a["name"], a["input"], a["description"]) for a in pending] == [("danger", {"x": 7}, "Destroy thing 7")]
    assert risky == []
    assert Turn.objects.get(session=chat).status == "paused"
    assert api.transcript(chat)["running"] is False
    response = decide(api, chat, pending[0]["id"], True)
    assert response.status_code == 202
    resumed = api.events(response.json()["stream_url"])
    assert [n for n, _ in resumed] == ["tool_result", "effects", "token", "done"]
    assert resumed[0][1] == {"id": "d1", "name": "danger", "status": "ok", "result": {"destroyed": 7}}
    assert risky == [7]
    assert_transcript_valid(chat)
    # The model saw the result before answering.
    assert get_backend().requests[-1]["messages"][-1]["parts"][0]["result"] == {"destroyed": 7}


def test_a_run_without_a_turn_pauses_for_a_person_too(api, chat, script, risky):
    """`run_agent(session)` outside the HTTP API: a confirm-listed call waits for a person, and
    deciding it through the API resumes the session as after any pause."""
    from agent.loop import run_agent
    from agent.models import Session

    script([[call("danger", "d1", {"x": 3}), TOOL_STOP], [{"kind": "text", "text": "Destroyed."}, DONE]])
    events = list(run_agent(Session.objects.get(pk=chat.pk)))
    assert [n for n, _ in events] == ["tool_use", "confirm"] and risky == []
    approval = Approval.objects.get()
    assert approval.turn is None and Session.objects.get(pk=chat.pk).awaiting_people
    response = decide(api, chat, approval.pk, True)
    assert response.status_code == 202
    assert [n for n, _ in api.events(response.json()["stream_url"])] == ["tool_result", "effects", "token", "done"]
    assert risky == [3]
    assert_transcript_valid(chat)


def test_reject_answers_the_model_with_an_error_result(api, chat, script, risky):
    script([[call("danger", "d1"), TOOL_STOP], [{"kind": "text", "text": "OK, I won't."}, DONE]])
    approval_id = api.turn(chat, "destroy")[-1][1]["approvals"][0]["id"]
    resumed = api.events(decide(api, chat, approval_id, False).json()["stream_url"])
    assert resumed[0][1]["status"] == "error"
    assert "rejected" in resumed[0][1]["result"]["error"]
    assert risky == []
    assert_transcript_valid(chat)
    # People read it as turned down, not as a failure: live on the page, and in the turn drawn again.
    chip = '<span class="chip-status" id="chip-d1-status" hx-swap-oob="true" data-status="declined">not approved</span>'
    assert chip in sse.encode_html((None, *resumed[0]), turn=None).decode()
    messages = list(chat.messages.prefetch_related("parts").order_by("position"))
    assert display.turn_result_statuses(messages, chat.pk) == {"d1": "declined"}


def test_an_approval_is_claimed_once(api, chat, script, risky):
    script([[call("danger", "d1"), TOOL_STOP], [DONE]])
    approval_id = api.turn(chat, "destroy")[-1][1]["approvals"][0]["id"]
    assert decide(api, chat, approval_id, True).status_code == 202
    again = decide(api, chat, approval_id, True)
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "approval_decided"
    assert risky == [0]


def test_expired_approval_cannot_be_claimed_and_the_next_turn_answers_it(api, chat, script, risky):
    script([[call("danger", "d1"), TOOL_STOP], [{"kind": "text", "text": "fine"}, DONE]])
    approval_id = api.turn(chat, "destroy")[-1][1]["approvals"][0]["id"]
    Approval.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = decide(api, chat, approval_id, True)
    assert response.status_code == 409 and response.json()["error"]["code"] == "approval_expired"
    assert api.turn(chat, "never mind")[-1][0] == "done"
    assert risky == []
    assert_transcript_valid(chat)
    # The error result sits right after the tool call, before the new user message.
    roles = [m.role for m in Message.objects.filter(session=chat)]
    assert roles == ["user", "assistant", "tool", "user", "assistant"]


def test_a_decided_call_whose_resumed_turn_died_runs_once_when_the_session_is_reclaimed(api, chat, script, risky):
    """The resumed turn's worker died after it claimed the lease and before it ran the call: the next
    message reclaims the session. The call waits on its decision, so it is no orphan to answer as
    interrupted; it runs as approved, once, with one result."""
    script([[call("danger", "d1", {"x": 7}), TOOL_STOP], [{"kind": "text", "text": "ok"}, DONE]])
    approval_id = api.turn(chat, "destroy 7")[-1][1]["approvals"][0]["id"]
    assert approvals.decide(chat, approval_id, chat.user, True) == "decided"
    turns.resume(chat)  # ... and its worker dies here
    Session.objects.filter(pk=chat.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert api.turn(chat, "hello?")[-1][0] == "done"
    assert risky == [7]
    results = Part.objects.filter(message__session=chat, type="tool_result", tool_use_id="d1")
    assert list(results.values_list("tool_status", "tool_result")) == [("ok", {"destroyed": 7})]
    assert_transcript_valid(chat)


def test_a_waiting_call_that_already_has_a_result_is_not_answered_again(api, chat, script, risky):
    """Answered while it waited (by an older release's orphan repair, say): the decision finds it
    answered and runs nothing; the transcript keeps one result for the call."""
    script([[call("danger", "d1", {"x": 7}), TOOL_STOP], [{"kind": "text", "text": "ok"}, DONE]])
    approval_id = api.turn(chat, "destroy 7")[-1][1]["approvals"][0]["id"]
    persist_tool_results(Run(chat), [{"tool_use_id": "d1", "name": "danger", "result": {}, "status": "error"}])
    assert approvals.decide(chat, approval_id, chat.user, True) == "decided"
    assert api.turn(chat, "hello?")[-1][0] == "done"
    assert risky == []
    assert Part.objects.filter(message__session=chat, type="tool_result", tool_use_id="d1").count() == 1
    assert not Approval.objects.filter(resolved=False).exists()
    assert_transcript_valid(chat)


def test_two_decisions_at_the_same_moment_resume_the_chat_once(api, chat, script, risky, monkeypatch):
    """Two requests each decide one of two calls, and each then finds nothing left waiting: the first
    to resume answers both; the second follows that turn, and the model is not called again."""
    script([[call("danger", "d1", {"x": 1}), call("danger", "d2", {"x": 2}), TOOL_STOP], [DONE], [DONE]])
    first, second = [a["id"] for a in api.turn(chat, "destroy 1 and 2")[-1][1]["approvals"]]
    assert approvals.decide(chat, first, chat.user, True) == "decided"  # request A decides ...
    resumed = decide(api, chat, second, True)  # ... request B decides and resumes first
    assert resumed.status_code == 202
    assert [n for n, _ in api.events(resumed.json()["stream_url"])] == ["tool_result", "tool_result", "effects", "done"]
    with pytest.raises(NothingToResume):  # A goes on: nothing waits any more
        turns.resume(chat)
    assert risky == [1, 2] and len(get_backend().requests) == 2
    assert list(Turn.objects.filter(session=chat).order_by("created_at").values_list("status", flat=True)) == [
        "paused",
        "done",
    ]
    # The view answers A with the stream of the turn that took its decision up.
    monkeypatch.setattr(approvals, "decide", lambda *args: "decided")
    late = decide(api, chat, first, True)
    assert late.status_code == 202
    assert streamed_turn(late.json()["stream_url"]) == streamed_turn(resumed.json()["stream_url"])
    assert len(get_backend().requests) == 2
    assert_transcript_valid(chat)


def test_a_new_message_answers_a_waiting_call_and_its_stream_says_so_first(api, chat, script, risky):
    """A person moves on without deciding: the new turn answers the call ("not approved") and streams
    that first, so the page's card and chip stop offering a decision that can no longer be made."""
    script([[call("danger", "d1", {"x": 7}), TOOL_STOP], [{"kind": "text", "text": "Fine."}, DONE]])
    api.turn(chat, "destroy 7")
    response = api.send(chat, "never mind")
    events = api.events(response.json()["stream_url"])
    assert [n for n, _ in events] == ["tool_result", "token", "done"]
    assert events[0][1] == {"id": "d1", "name": "danger", "status": "error", "result": {"error": NOT_APPROVED}}
    assert risky == []
    html = sse.encode_html((None, *events[0]), turn=None).decode()
    assert 'data-status="declined">not approved</span>' in html
    assert '<div id="chip-d1-ask" hx-swap-oob="true"><p class="note">Not approved: the chat went on' in html
    assert_transcript_valid(chat)


def test_another_user_cannot_decide(api, chat, script, risky, other_user):
    from tests.conftest import ApiClient

    script([[call("danger", "d1"), TOOL_STOP], [DONE]])
    approval_id = api.turn(chat, "destroy")[-1][1]["approvals"][0]["id"]
    response = ApiClient(other_user).post(f"/api/agent/sessions/{chat.pk}/approvals/{approval_id}", {"approve": True})
    assert response.status_code == 404
    assert Approval.objects.get().status == "pending"


def test_parallel_calls_safe_runs_risky_waits_each_gets_one_result(api, chat, script, risky):
    script(
        [
            [call("safe", "s1"), call("danger", "d1", {"x": 1}), call("danger", "d2", {"x": 2}), TOOL_STOP],
            [{"kind": "text", "text": "All done."}, DONE],
        ]
    )
    events = api.turn(chat, "do all")
    assert [n for n, _ in events] == ["tool_use", "tool_use", "tool_use", "tool_result", "confirm"]
    assert risky == ["safe"]
    first, second = events[-1][1]["approvals"]
    waiting = decide(api, chat, first["id"], True)
    assert waiting.status_code == 202
    assert waiting.json() == {"stream_url": None, "waiting": [second["id"]]}
    resumed = api.events(decide(api, chat, second["id"], False).json()["stream_url"])
    assert [(p["id"], p["status"]) for n, p in resumed if n == "tool_result"] == [("d1", "ok"), ("d2", "error")]
    assert risky == ["safe", 1]
    results = Part.objects.filter(message__session=chat, type="tool_result").values_list("tool_use_id", flat=True)
    assert sorted(results) == ["d1", "d2", "s1"]
    assert_transcript_valid(chat)


def test_bad_decision_body(api, chat, script, risky):
    script([[call("danger", "d1"), TOOL_STOP]])
    approval_id = api.turn(chat, "destroy")[-1][1]["approvals"][0]["id"]
    response = api.post(f"/api/agent/sessions/{chat.pk}/approvals/{approval_id}", {"approve": "yes"})
    assert response.status_code == 400


def test_confirm_tools_setting_empty_runs_at_once(api, chat, script, risky, settings):
    settings.AGENT_CONFIRM_TOOLS = []
    script([[call("danger", "d1", {"x": 3}), TOOL_STOP], [DONE]])
    events = api.turn(chat, "destroy")
    assert "confirm" not in [n for n, _ in events]
    assert risky == [3]


def test_html_flavour_of_confirm_shows_plain_words_and_buttons(api, chat, script, risky):
    script([[call("danger", "d1", {"x": 9}), TOOL_STOP]])
    url = api.send(chat, "destroy").json()["stream_url"]
    body = b"".join(api.client.get(url + "?flavour=html").streaming_content).decode()
    assert "Destroy thing 9" in body
    assert "Approve" in body and "Reject" in body
    assert [line[7:] for line in body.split("\n") if line.startswith("event: ")][-2:] == ["confirm", "end"]


def _approval_reads(queries):
    return [q["sql"] for q in queries if q["sql"].startswith("SELECT") and 'FROM "agent_approval"' in q["sql"]]


def test_a_session_waits_for_people_from_the_pause_until_a_turn_answers_the_calls(api, chat, script, risky):
    """The flag lets a new turn skip looking for open approvals; it is set before any is recorded."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agent import turns
    from agent.models import Session

    script(
        [
            [call("danger", "d1"), TOOL_STOP],
            [{"kind": "text", "text": "fine"}, DONE],
            [{"kind": "text", "text": "ok"}, DONE],
        ]
    )
    stale = Session.objects.get(pk=chat.pk)  # loaded before the pause, as a request racing it would be
    assert api.turn(chat, "destroy")[-1][0] == "confirm"
    assert Session.objects.get(pk=chat.pk).awaiting_people
    # The next message, through a session object that still says nobody waits: the lease's UPDATE
    # finds the flag set in the database, so the open approval is looked up and answered.
    turn, _ = turns.begin(stale, "never mind")
    turns.execute(turn)
    assert risky == []
    assert Approval.objects.get().resolved
    assert not Session.objects.get(pk=chat.pk).awaiting_people
    assert_transcript_valid(chat)
    assert [m.role for m in Message.objects.filter(session=chat)] == ["user", "assistant", "tool", "user", "assistant"]
    # Now nothing waits: a new message does not look for approvals at all.
    with CaptureQueriesContext(connection) as ctx:
        turns.begin(Session.objects.get(pk=chat.pk), "and now?")
    assert _approval_reads(ctx.captured_queries) == []


def test_a_run_without_a_turn_asks_the_flag_once_and_writes_nothing_when_nobody_waits(chat):
    """`run_agent(session)` with no turn (no lease taken, so nothing known): one read of the flag."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agent import approvals
    from agent.models import Session

    loaded = Session.objects.get(pk=chat.pk)
    with CaptureQueriesContext(connection) as ctx:
        assert approvals.settle(Run(loaded)) == []
    assert [q["sql"].split()[0] for q in ctx.captured_queries] == ["SELECT"]
    assert 'FROM "agent_session"' in ctx.captured_queries[0]["sql"]

    Session.objects.filter(pk=chat.pk).update(awaiting_people=True)  # flagged, then nothing recorded (a crash)
    assert approvals.settle(Run(Session.objects.get(pk=chat.pk))) == []
    assert not Session.objects.get(pk=chat.pk).awaiting_people  # cleared, so leases are taken at once again


def test_a_run_without_a_turn_answers_decided_calls_first_and_reads_the_flag_once_when_nobody_waits(
    api, chat, script, risky
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agent.loop import run_agent
    from agent.models import Session

    script(
        [
            [call("danger", "d1"), TOOL_STOP],
            [{"kind": "text", "text": "understood"}, DONE],
            [{"kind": "text", "text": "again"}, DONE],
        ]
    )
    assert api.turn(chat, "destroy")[-1][0] == "confirm"
    Approval.objects.update(status=Approval.REJECTED)
    events = list(run_agent(Session.objects.get(pk=chat.pk)))
    assert [name for name, _ in events] == ["tool_result", "token", "done"]
    assert events[0][1]["status"] == "error" and risky == [] and Approval.objects.get().resolved
    assert not Session.objects.get(pk=chat.pk).awaiting_people
    assert_transcript_valid(chat)

    loaded = Session.objects.get(pk=chat.pk)
    with CaptureQueriesContext(connection) as ctx:
        assert [name for name, _ in run_agent(loaded)][-1] == "done"
    assert not _approval_reads(ctx.captured_queries)
    assert len([q for q in ctx.captured_queries if "awaiting_people" in q["sql"].split("FROM")[-1]]) == 1


def test_sessions_with_open_approvals_before_the_flag_existed_are_flagged_by_the_migration(api, chat, script, risky):
    import importlib

    from django.apps import apps

    from agent.models import Session

    script([[call("danger", "d1"), TOOL_STOP]])
    assert api.turn(chat, "destroy")[-1][0] == "confirm"
    Session.objects.update(awaiting_people=False)  # as every session was before the migration
    migration = importlib.import_module("agent.migrations.0006_session_awaiting_people")
    migration.flag_open_approvals(apps, None)
    assert Session.objects.get(pk=chat.pk).awaiting_people


# A call can be confirmed under another tool's name, and an approval is bound to what it acts on ----------------


@pytest.fixture
def guarded(settings):
    """`edit` waits for a person only on a "live" thing (it is then confirmed as `publish`), shows what
    will change, and is bound to the thing's version at the time it asked."""
    settings.AGENT_CONFIRM_TOOLS = ["publish"]
    thing = {"version": 1, "ran": []}

    @register(
        "edit",
        description="Edit a thing",
        input_schema={"type": "object", "properties": {"x": {"type": "integer"}, "live": {"type": "boolean"}}},
        describe=lambda session, name, data: Description(f"Change thing {data.get('x')}", "- old\n+ <b>new</b>\n same"),
        confirm_as=lambda session, name, data: "publish" if data.get("live") else name,
        version=lambda session, name, data: {"version": thing["version"]},
    )
    def edit(session, x=0, live=False):
        thing["ran"].append(x)
        return {"edited": x}

    yield thing
    unregister("edit")


def test_a_call_confirmed_as_another_tool_waits_only_when_its_hook_says_so(api, chat, script, guarded):
    script([[call("edit", "e1", {"x": 1}), call("edit", "e2", {"x": 2, "live": True}), TOOL_STOP]])
    events = api.turn(chat, "edit both")
    assert [n for n, _ in events] == ["tool_use", "tool_use", "tool_result", "confirm"]
    assert guarded["ran"] == [1]
    [pending] = events[-1][1]["approvals"]
    assert (pending["name"], pending["input"], pending["description"]) == (
        "edit",
        {"x": 2, "live": True},
        "Change thing 2",
    )
    assert pending["detail"] == "- old\n+ <b>new</b>\n same"
    assert Approval.objects.get().version == {"version": 1}


def test_an_approval_runs_the_call_while_what_it_acts_on_is_unchanged(api, chat, script, guarded):
    script([[call("edit", "e1", {"x": 5, "live": True}), TOOL_STOP], [{"kind": "text", "text": "Changed."}, DONE]])
    approval_id = api.turn(chat, "edit")[-1][1]["approvals"][0]["id"]
    resumed = api.events(decide(api, chat, approval_id, True).json()["stream_url"])
    assert resumed[0][1] == {"id": "e1", "name": "edit", "status": "ok", "result": {"edited": 5}}
    assert guarded["ran"] == [5]


def test_a_change_between_the_prompt_and_the_approval_voids_it(api, chat, script, guarded):
    script([[call("edit", "e1", {"x": 5, "live": True}), TOOL_STOP], [{"kind": "text", "text": "It changed."}, DONE]])
    approval_id = api.turn(chat, "edit")[-1][1]["approvals"][0]["id"]
    guarded["version"] = 2  # someone changed the thing after the person was asked
    resumed = api.events(decide(api, chat, approval_id, True).json()["stream_url"])
    assert resumed[0][1] == {
        "id": "e1",
        "name": "edit",
        "status": "error",
        "result": {"error": CHANGED},
    }
    assert guarded["ran"] == []
    assert get_backend().requests[-1]["messages"][-1]["parts"][0]["result"] == {"error": CHANGED}
    assert_transcript_valid(chat)


def test_with_no_confirm_tools_a_confirm_as_hook_waits_for_nothing(api, chat, script, guarded, settings):
    settings.AGENT_CONFIRM_TOOLS = []
    script([[call("edit", "e1", {"x": 4, "live": True}), TOOL_STOP], [DONE]])
    assert "confirm" not in [n for n, _ in api.turn(chat, "edit")]
    assert guarded["ran"] == [4]


def test_html_flavour_shows_what_will_change_escaped(api, chat, script, guarded):
    script([[call("edit", "e1", {"x": 2, "live": True}), TOOL_STOP]])
    url = api.send(chat, "edit").json()["stream_url"]
    body = b"".join(api.client.get(url + "?flavour=html").streaming_content).decode()
    assert "Change thing 2" in body
    # Named as a group: a <pre> is a generic element, which ARIA does not let aria-label name.
    assert '<pre class="approval-diff" role="group" aria-label="What will change">' in body
    assert '<span class="diff-del">- old</span>' in body
    assert '<span class="diff-add">+ &lt;b&gt;new&lt;/b&gt;</span>' in body
    assert "<b>new</b>" not in body
