"""`GET /api/agent/sessions/<id>?after=<position>&limit=<n>`: a long chat's transcript in pages, each
in the transcript's own shape, the next page named by a `Link: <...>; rel="next"` header."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agent.models import Session
from agent.state import Run
from agent.transcript import add_message
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

MESSAGE_KEYS = {"id", "role", "position", "parts", "usage", "stop_reason", "tools_offered"}


def fill(chat: Session, n: int) -> None:
    """n messages: a user's, then an assistant's tool call and its result, in turn."""
    run = Run(chat)
    for i in range(n):
        if i % 3 == 0:
            add_message(run, "user", [{"type": "text", "text": f"m{i}"}])
        elif i % 3 == 1:
            call = {"type": "tool_use", "id": f"t{i}", "name": "look", "input": {"i": i}}
            add_message(run, "assistant", [{"type": "text", "text": f"m{i}"}, call], stop_reason="tool_use")
        else:
            result = {"type": "tool_result", "tool_use_id": f"t{i - 1}", "name": "look", "result": {"n": i}}
            add_message(run, "tool", [result])


def next_link(response) -> str | None:
    """The URL of `Link: <url>; rel="next"`, or None when the header names no next page."""
    found = re.fullmatch(r'<([^>]*)>; rel="next"', response.get("Link", ""))
    return found.group(1) if found else None


def test_paging_through_a_chat_gives_every_message_once_in_order_in_the_transcript_shape(api, chat):
    fill(chat, 23)
    whole = api.transcript(chat)
    url: str | None = f"/api/agent/sessions/{chat.pk}?limit=5"
    pages = []
    while url is not None:
        response = api.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        assert set(body) == {"id", "purpose", "running", "messages"}  # the shape, no new key
        assert body["id"] == str(chat.pk) and body["purpose"] == "chat" and body["running"] is False
        pages.append(body["messages"])
        url = next_link(response)
    assert [len(page) for page in pages] == [5, 5, 5, 5, 3]
    paged = [m for page in pages for m in page]
    assert paged == whole["messages"]  # every message once, in order, each as the whole transcript has it
    assert [m["position"] for m in paged] == list(range(23))
    assert all(set(m) == MESSAGE_KEYS for m in paged)


def test_after_gives_the_messages_past_a_position_and_only_those(api, chat):
    fill(chat, 7)
    response = api.get(f"/api/agent/sessions/{chat.pk}?after=3")
    assert [m["position"] for m in response.json()["messages"]] == [4, 5, 6]
    assert next_link(response) is None  # (the last page)
    response = api.get(f"/api/agent/sessions/{chat.pk}?after=6")
    assert response.status_code == 200 and response.json()["messages"] == []
    assert "Link" not in response
    assert api.get(f"/api/agent/sessions/{chat.pk}?after=99999999999999999999999").json()["messages"] == []


def test_a_client_reading_only_what_is_new_gets_each_new_message_once(api, chat):
    fill(chat, 4)
    seen = api.get(f"/api/agent/sessions/{chat.pk}?after=0").json()["messages"]
    last = seen[-1]["position"]
    assert api.get(f"/api/agent/sessions/{chat.pk}?after={last}").json()["messages"] == []
    add_message(Run(chat), "user", [{"type": "text", "text": "new"}])
    new = api.get(f"/api/agent/sessions/{chat.pk}?after={last}").json()["messages"]
    assert [(m["position"], m["parts"]) for m in new] == [(4, [{"type": "text", "text": "new"}])]


def test_the_next_link_keeps_the_limit_and_starts_after_the_page(api, chat):
    fill(chat, 6)
    response = api.get(f"/api/agent/sessions/{chat.pk}?after=1&limit=2")
    assert [m["position"] for m in response.json()["messages"]] == [2, 3]
    assert response["Link"] == f'</api/agent/sessions/{chat.pk}?after=3&limit=2>; rel="next"'
    response = api.get(f"/api/agent/sessions/{chat.pk}?after=3&limit=2")
    assert [m["position"] for m in response.json()["messages"]] == [4, 5]
    assert "Link" not in response  # exactly the last two: no empty page after them


def test_a_page_is_at_most_200_messages_when_paging_is_asked(api, chat):
    fill(chat, 203)
    response = api.get(f"/api/agent/sessions/{chat.pk}?after=0")  # (after alone: the cap is the page's size)
    assert [m["position"] for m in response.json()["messages"]] == list(range(1, 201))
    assert response["Link"] == f'</api/agent/sessions/{chat.pk}?after=200&limit=200>; rel="next"'
    response = api.get(f"/api/agent/sessions/{chat.pk}?limit=200")
    assert len(response.json()["messages"]) == 200 and next_link(response) is not None
    assert len(api.transcript(chat)["messages"]) == 203  # without the parameters, the whole transcript


def test_the_call_without_parameters_is_unchanged_and_has_no_link(api, chat):
    fill(chat, 5)
    response = api.get(f"/api/agent/sessions/{chat.pk}")
    assert "Link" not in response
    body = response.json()
    assert set(body) == {"id", "purpose", "running", "messages"}
    assert [m["position"] for m in body["messages"]] == [0, 1, 2, 3, 4]
    assert body["messages"][1] == {
        "id": body["messages"][1]["id"],
        "role": "assistant",
        "position": 1,
        "parts": [{"type": "text", "text": "m1"}, {"type": "tool_use", "id": "t1", "name": "look", "input": {"i": 1}}],
        "usage": body["messages"][1]["usage"],
        "stop_reason": "tool_use",
        "tools_offered": None,
    }
    assert api.get(f"/api/agent/sessions/{chat.pk}?unknown=1").json() == body  # another parameter changes nothing


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("after=-1", "after"),
        ("after=", "after"),
        ("after=abc", "after"),
        ("after=1.5", "after"),
        ("after=+1", "after"),
        ("after=%201", "after"),
        ("after=%D9%A1", "after"),  # an Arabic-Indic digit one, which Python's int() would take
        ("after=1&after=2", "after"),
        ("limit=0", "limit"),
        ("limit=-5", "limit"),
        ("limit=", "limit"),
        ("limit=201", "limit"),
        ("limit=1e3", "limit"),
        ("limit=2&limit=3", "limit"),
        ("after=2&limit=x", "limit"),
    ],
)
def test_a_bad_after_or_limit_is_400_bad_request_in_the_error_shape(api, chat, query, name):
    fill(chat, 3)
    response = api.get(f"/api/agent/sessions/{chat.pk}?{query}")
    assert response.status_code == 400, response.content
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == "bad_request"
    assert f"Give {name} as" in body["error"]["message"]  # the sentence names the parameter


def test_another_users_chat_is_404_with_or_without_the_parameters(chat, other_user):
    theirs = ApiClient(other_user)
    for query in ("", "?after=0", "?limit=5", "?after=-1"):
        response = theirs.get(f"/api/agent/sessions/{chat.pk}{query}")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


def queries_for(api: ApiClient, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert api.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_a_page_is_as_many_queries_as_the_whole_transcript_however_long_the_chat(api, chat):
    fill(chat, 3)
    whole = queries_for(api, f"/api/agent/sessions/{chat.pk}")
    page = queries_for(api, f"/api/agent/sessions/{chat.pk}?limit=2")
    fill_more = Run(chat)
    for i in range(60):
        add_message(fill_more, "user", [{"type": "text", "text": f"more {i}"}])
    assert queries_for(api, f"/api/agent/sessions/{chat.pk}?limit=50") == page
    assert queries_for(api, f"/api/agent/sessions/{chat.pk}?after=10&limit=7") == page
    assert queries_for(api, f"/api/agent/sessions/{chat.pk}?after=1000") <= page  # (no parts to read)
    assert page == whole  # (messages, then their parts: one read each)
