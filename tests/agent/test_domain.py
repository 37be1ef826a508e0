"""A domain plugged into the engine (tests/agent/testapp): its session policy and its tools.

The engine knows nothing of notebooks; it asks the configured `SessionPolicy` who may open, read
and use a chat, and offers and runs the tools the domain registered at start-up.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent.backends import get_backend
from agent.models import Session
from tests.agent.testapp.models import Note, Notebook, NotebookLink
from tests.agent.testapp.policy import NotebookPolicy

pytestmark = pytest.mark.django_db

DONE = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}
TOOL_STOP = {"kind": "done", "stop_reason": "tool_use"}
NOTEBOOK_TOOLS = ["delete_note", "list_notes", "read_note", "write_note"]


def call(name, id, input=None):
    return {"kind": "tool_use", "id": id, "name": name, "input": input or {}}


def names(events):
    return [n for n, _ in events]


@pytest.fixture
def notebook(user):
    return Notebook.objects.create(owner=user, name="ideas")


@pytest.fixture
def notebook_chat(api, notebook):
    response = api.post("/api/agent/sessions", {"notebook": "ideas"})
    assert response.status_code == 201, response.content
    return Session.objects.get(pk=response.json()["id"])


def set_state(notebook, state):
    Notebook.objects.filter(pk=notebook.pk).update(state=state)


def test_the_policy_creates_the_session_and_ties_it_to_the_notebook(api, notebook, notebook_chat):
    assert NotebookLink.objects.get(session=notebook_chat).notebook == notebook
    assert notebook_chat.system_prompt == "You keep the notebook ideas."
    assert notebook_chat.user == notebook.owner


@pytest.mark.parametrize(
    "body,status,code",
    [
        ({}, 400, "bad_request"),
        ({"notebook": 7}, 400, "bad_request"),
        ({"notebook": "nowhere"}, 404, "not_found"),
        ({"notebook": "theirs"}, 404, "not_found"),
        ({"notebook": "old"}, 403, "forbidden"),
    ],
)
def test_the_policys_refusals_become_api_errors(api, user, other_user, body, status, code):
    Notebook.objects.create(owner=other_user, name="theirs")
    Notebook.objects.create(owner=user, name="old", state=Notebook.ARCHIVED)
    response = api.post("/api/agent/sessions", body)
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert not Session.objects.exists()


def test_opening_sessions_counts_under_the_message_rate_limit(api, notebook, script, settings):
    """A new session takes a slot of AGENT_MESSAGES_PER_MINUTE, as a message does: past it, the same 429."""
    settings.AGENT_MESSAGES_PER_MINUTE = 3
    script([[{"kind": "text", "text": "ok"}, DONE]])
    first = api.post("/api/agent/sessions", {"notebook": "ideas"})
    assert api.post("/api/agent/sessions", {"notebook": "ideas"}).status_code == 201
    assert api.send(Session.objects.get(pk=first.json()["id"]), "hello").status_code == 202
    refused = api.post("/api/agent/sessions", {"notebook": "ideas"})
    assert refused.status_code == 429
    body = refused.json()
    assert body["error"] == {
        "code": "rate_limited",
        "message": "You're sending messages too quickly. Please wait a moment.",
    }
    assert 1 <= body["retry_after_seconds"] <= 60
    assert Session.objects.count() == 2
    assert api.send(Session.objects.get(pk=first.json()["id"]), "again").status_code == 429


def test_the_policys_own_words_explain_a_bad_request(api):
    response = api.post("/api/agent/sessions", {})
    assert response.json()["error"]["message"] == 'Name the notebook: {"notebook": "<name>"}.'


def test_a_policys_own_bug_is_never_read_out_as_if_it_were_its_words(api, monkeypatch, caplog):
    """Only a `ValidationError` is the policy's words to the person; any other exception in it is a bug:
    logged, answered as any server error is, its text never shown (a ValueError's was, as the reason)."""

    def broken(self, user, data):
        return int("x")  # ValueError: invalid literal for int() with base 10: 'x'

    monkeypatch.setattr(NotebookPolicy, "create", broken)
    api.client.raise_request_exception = False
    response = api.post("/api/agent/sessions", {"notebook": "ideas"})
    assert response.status_code == 500  # (the project's handler500 words it: JSON, with a reference, here)
    assert "invalid literal" not in response.content.decode()
    assert any("invalid literal" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)
    assert not Session.objects.exists()


def test_an_archived_notebooks_chat_stays_readable_but_takes_no_message(api, notebook, notebook_chat, script):
    script([[{"kind": "text", "text": "Noted."}, DONE]])
    api.turn(notebook_chat, "Remember milk")
    set_state(notebook, Notebook.ARCHIVED)  # asked afresh on every request: no stale answer
    response = api.send(notebook_chat, "And eggs")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    body = api.transcript(notebook_chat)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]


def test_a_sealed_notebooks_chat_and_its_streams_are_gone(api, notebook, notebook_chat, script):
    script([[{"kind": "text", "text": "Noted."}, DONE]])
    stream_url = api.send(notebook_chat, "Remember milk").json()["stream_url"]
    assert names(api.events(stream_url)) == ["token", "done"]
    set_state(notebook, Notebook.SEALED)
    assert api.get(f"/api/agent/sessions/{notebook_chat.pk}").status_code == 404
    assert api.get(stream_url).status_code == 404
    assert api.send(notebook_chat, "Anything?").status_code == 404
    set_state(notebook, Notebook.OPEN)
    assert api.get(f"/api/agent/sessions/{notebook_chat.pk}").status_code == 200


def test_what_the_policy_names_in_related_is_loaded_with_the_session(api, notebook_chat):
    """The policy's checks find the notebook already loaded: no query of their own on each request."""
    with CaptureQueriesContext(connection) as ctx:
        assert api.get(f"/api/agent/sessions/{notebook_chat.pk}").status_code == 200
    sql = [q["sql"] for q in ctx.captured_queries]
    assert any('JOIN "notes_notebooklink"' in q for q in sql)
    assert not [q for q in sql if 'FROM "notes_notebooklink"' in q]


def test_a_session_of_no_notebook_is_an_ordinary_chat(api, chat, script):
    script([[{"kind": "text", "text": "Hi."}, DONE]])
    assert names(api.turn(chat, "Hello")) == ["token", "done"]


def test_the_domains_tools_are_offered_in_its_chats_only(api, chat, notebook_chat, script):
    script([[{"kind": "text", "text": "Hi."}, DONE], [{"kind": "text", "text": "Hi."}, DONE]])
    api.turn(notebook_chat, "Hello")
    api.turn(chat, "Hello")
    first, second = get_backend().requests
    assert [t["name"] for t in first["tools"]] == NOTEBOOK_TOOLS
    assert first["tools"][3]["input_schema"]["required"] == ["title"]
    assert [t["name"] for t in second["tools"]] == []


def test_a_tool_outside_its_chats_is_refused_without_running(api, chat, script):
    script([[call("write_note", "w1", {"title": "Milk"}), TOOL_STOP], [{"kind": "text", "text": "Sorry."}, DONE]])
    events = api.turn(chat, "Note milk")
    assert events[1] == (
        "tool_result",
        {
            "id": "w1",
            "name": "write_note",
            "status": "error",
            "result": {"error": "The tool 'write_note' is not available to you here. Ask the user to grant it."},
        },
    )
    assert not Note.objects.exists()


def test_a_tool_run_changes_the_domain_and_reports_its_effects(api, notebook, notebook_chat, script):
    script(
        [
            [call("write_note", "w1", {"title": "Milk", "body": "Two litres"}), TOOL_STOP],
            [call("list_notes", "l1"), TOOL_STOP],
            [{"kind": "text", "text": "Written."}, DONE],
        ]
    )
    events = api.turn(notebook_chat, "Note milk")
    note = Note.objects.get()
    assert (note.notebook, note.title, note.body) == (notebook, "Milk", "Two litres")
    assert names(events) == ["tool_use", "tool_result", "effects", "tool_use", "tool_result", "token", "done"]
    assert events[1][1]["result"] == {"id": note.pk}
    assert events[2][1] == [{"type": "note.written", "id": note.pk}]
    assert events[4][1]["result"] == {"items": [{"id": note.pk, "title": "Milk"}]}
    assert "note.written" not in str(get_backend().requests[1]["messages"])  # effects never reach the model


def test_the_domains_schema_is_checked_before_its_handler_runs(api, notebook_chat, script):
    script([[call("write_note", "w1", {"title": ""}), TOOL_STOP], [{"kind": "text", "text": "Oops."}, DONE]])
    events = api.turn(notebook_chat, "Note nothing")
    assert events[1][1]["status"] == "error"
    assert events[1][1]["result"]["error"].startswith("Invalid input at title:")
    assert not Note.objects.exists()


def test_a_confirmed_tool_waits_for_a_person_in_the_domains_words(api, notebook, notebook_chat, script):
    note = Note.objects.create(notebook=notebook, title="Groceries")
    script([[call("delete_note", "d1", {"note_id": note.pk}), TOOL_STOP], [{"kind": "text", "text": "Gone."}, DONE]])
    events = api.turn(notebook_chat, "Delete groceries")
    assert names(events) == ["tool_use", "confirm"]
    (pending,) = events[-1][1]["approvals"]
    assert pending["description"] == "Delete the note “Groceries”"
    assert Note.objects.filter(pk=note.pk).exists()

    response = api.post(f"/api/agent/sessions/{notebook_chat.pk}/approvals/{pending['id']}", {"approve": True})
    assert response.status_code == 202
    resumed = api.events(response.json()["stream_url"])
    assert names(resumed) == ["tool_result", "effects", "token", "done"]
    assert resumed[1][1] == [{"type": "note.deleted", "id": note.pk}]
    assert not Note.objects.filter(pk=note.pk).exists()


def test_an_archived_notebooks_approval_cannot_be_decided(api, notebook, notebook_chat, script):
    note = Note.objects.create(notebook=notebook, title="Groceries")
    script([[call("delete_note", "d1", {"note_id": note.pk}), TOOL_STOP]])
    (pending,) = api.turn(notebook_chat, "Delete groceries")[-1][1]["approvals"]
    set_state(notebook, Notebook.ARCHIVED)
    response = api.post(f"/api/agent/sessions/{notebook_chat.pk}/approvals/{pending['id']}", {"approve": True})
    assert response.status_code == 403
    assert Note.objects.filter(pk=note.pk).exists()
