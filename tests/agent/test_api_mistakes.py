"""The mistakes a script makes against the JSON API each get a clear status and the API's error
shape, `{"error": {"code", "message"}}`: never an HTML page, an empty body or a traceback."""

from __future__ import annotations

import uuid

import pytest

from agent.models import Approval, Message, Session
from agent.tools import register, unregister
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

TOOL_STOP = {"kind": "done", "stop_reason": "tool_use"}


def assert_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    return body


def test_a_body_too_large_to_read_is_413_too_large_on_every_json_endpoint(api, chat, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    raw = b'{"text": "' + b"a" * 2000 + b'"}'
    for url in (
        "/api/agent/sessions",
        f"/api/agent/sessions/{chat.pk}/messages",
        f"/api/agent/sessions/{chat.pk}/approvals/{uuid.uuid4()}",
    ):
        assert_error(api.post(url, raw=raw), 413, "too_large")
    assert Session.objects.count() == 1 and not Message.objects.exists()


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("get", "/api/agent/sessions", "POST"),
        ("put", "/api/agent/sessions/{id}/messages", "POST"),
        ("get", "/api/agent/sessions/{id}/stop", "POST"),
        ("delete", "/api/agent/sessions/{id}", "GET"),
        ("post", "/api/agent/sessions/{id}", "GET"),
        ("head", "/api/agent/sessions/{id}", "GET"),
        ("options", "/api/agent/sessions/{id}/messages", "POST"),
        ("get", "/api/agent/sessions/{id}/approvals/" + str(uuid.uuid4()), "POST"),
        ("post", "/api/agent/sessions/{id}/turns/" + str(uuid.uuid4()) + "/stream", "GET"),
        ("post", "/api/agent/sessions/{id}/attachments/1", "GET"),
    ],
)
def test_a_wrong_method_is_405_with_allow_and_the_error_shape(api, chat, method, path, allow):
    response = getattr(api.client, method)(path.format(id=chat.pk), HTTP_X_CSRFTOKEN=api.csrf)
    assert response.status_code == 405
    assert response["Allow"] == allow
    if method != "head":  # (a HEAD answer has no body)
        assert_error(response, 405, "method_not_allowed")


@pytest.mark.parametrize(
    "path",
    [
        "/api/agent/sessions/not-a-uuid",
        "/api/agent/sessions/not-a-uuid/messages",
        "/api/agent/sessions/{id}/turns/not-a-uuid/stream",
        "/api/agent/sessions/{id}/approvals/not-a-uuid",
        "/api/agent/sessions/{id}/attachments/not-a-number",
        "/api/agent/sessions/{id}/messages/",
        "/api/agent/nothing-here",
        "/api/agent/",
    ],
)
def test_a_malformed_id_or_an_unknown_path_is_404_not_found_as_json(api, chat, path):
    assert_error(api.get(path.format(id=chat.pk)), 404, "not_found")
    assert_error(api.post(path.format(id=chat.pk), {"text": "hi", "approve": True}), 404, "not_found")
    assert not Message.objects.exists()


@pytest.fixture
def risky(settings):
    settings.AGENT_CONFIRM_TOOLS = ["danger"]
    register("danger", description="Irreversible")(lambda session: {"destroyed": True})
    yield
    unregister("danger")


def test_an_unknown_or_another_users_approval_id_is_404_not_found(api, chat, script, other_user, risky):
    script([[{"kind": "tool_use", "id": "d1", "name": "danger", "input": {}}, TOOL_STOP]])
    others = ApiClient(other_user)
    their_chat = Session.objects.create(user=other_user, purpose="chat", system_prompt="You are helpful.")
    theirs = others.turn(their_chat, "delete it")[-1][1]["approvals"][0]["id"]

    for approval_id in (uuid.uuid4(), theirs):
        response = api.post(f"/api/agent/sessions/{chat.pk}/approvals/{approval_id}", {"approve": True})
        assert_error(response, 404, "not_found")
    assert Approval.objects.get(pk=theirs).status == Approval.PENDING


def test_an_unknown_attachment_is_404_not_found_as_json(api, chat):
    assert_error(api.get(f"/api/agent/sessions/{chat.pk}/attachments/12345"), 404, "not_found")


@pytest.mark.parametrize(
    ("content_type", "raw"),
    [("application/x-www-form-urlencoded", b"text=hello"), ("application/json", b'{"text": "\xff"}')],
    ids=["form-encoded", "not-utf-8"],
)
def test_a_message_body_that_is_not_json_says_what_to_send(api, chat, content_type, raw):
    response = api.client.post(
        f"/api/agent/sessions/{chat.pk}/messages", data=raw, content_type=content_type, HTTP_X_CSRFTOKEN=api.csrf
    )
    body = assert_error(response, 400, "bad_message")
    assert body["error"]["message"] == 'Send a JSON object, {"text": "..."}, or multipart/form-data.'
    assert not Message.objects.exists()


@pytest.mark.parametrize("multipart", [False, True], ids=["json", "multipart"])
def test_a_message_with_a_nul_character_is_kept_with_a_replacement_character(api, chat, script, multipart):
    """PostgreSQL's text columns cannot hold NUL: it becomes U+FFFD, as a lone surrogate becomes "?".
    Was: `202` never came, the insert failed and the API answered a `500` (on SQLite it was kept)."""
    script([[{"kind": "text", "text": "ok"}, {"kind": "done", "stop_reason": "end_turn"}]])
    url = f"/api/agent/sessions/{chat.pk}/messages"
    if multipart:
        response = api.client.post(url, {"text": "hi\x00there"}, HTTP_X_CSRFTOKEN=api.csrf)
    else:
        response = api.post(url, {"text": "hi\x00there"})
    assert response.status_code == 202, response.content
    api.events(response.json()["stream_url"])
    [message] = Message.objects.filter(session=chat, role=Message.USER)
    assert [p.text for p in message.parts.all()] == ["hi\ufffdthere"]
