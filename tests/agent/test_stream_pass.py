"""The stream a checked request hands out opens with its pass (`agent.stream_pass`); any other is checked in full."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import resolve

from agent import stream_pass
from agent.policy import get_policy
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

DONE = {"kind": "done", "stop_reason": "end_turn"}
HI = [[{"kind": "text", "text": "hi"}, DONE]]


def tables_read(ctx: CaptureQueriesContext) -> str:
    return " ".join(q["sql"] for q in ctx.captured_queries)


def test_the_stream_a_message_hands_out_opens_without_reading_the_session_or_the_user_again(api, chat, script):
    script(HI)
    url = api.send(chat, "hello").json()["stream_url"]
    assert resolve(url).url_name == "stream_pass"
    with CaptureQueriesContext(connection) as ctx:
        events = api.events(url)
    assert [name for name, _ in events] == ["token", "done"]
    read = tables_read(ctx)
    assert "django_session" not in read and "auth_user" not in read and "agent_session" not in read


def test_without_the_pass_the_same_stream_reads_who_is_asking(api, chat, script):
    script(HI)
    url = api.send(chat, "hello").json()["stream_url"]
    match = resolve(url)
    plain = f"/api/agent/sessions/{match.kwargs['session_id']}/turns/{match.kwargs['turn_id']}/stream"
    with CaptureQueriesContext(connection) as ctx:
        events = api.events(plain)
    assert [name for name, _ in events] == ["token", "done"]
    assert "django_session" in tables_read(ctx) and "auth_user" in tables_read(ctx)


def test_a_copied_stream_url_is_checked_in_full_for_whoever_opens_it(api, chat, script, other_user):
    script(HI)
    url = api.send(chat, "hello").json()["stream_url"]
    response = ApiClient(other_user).get(url)  # another signed-in user with the URL: their own cookie
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    assert [name for name, _ in api.events(url)] == ["token", "done"]


def test_a_signed_out_browser_with_a_stale_pass_is_asked_to_sign_in(api, chat, script, monkeypatch):
    script(HI)
    url = api.send(chat, "hello").json()["stream_url"]
    monkeypatch.setattr(stream_pass, "PASS_SECONDS", -1)  # every pass has expired
    api.client.logout()
    response = api.get(url)
    assert (response.status_code, response.json()["error"]["code"]) == (401, "unauthenticated")


@pytest.mark.parametrize("spoil", ["expired", "forged", "another_turn"])
def test_a_pass_that_does_not_hold_falls_back_to_the_full_check(api, chat, script, monkeypatch, other_user, spoil):
    script(HI)
    url = api.send(chat, "hello").json()["stream_url"]
    match = resolve(url)
    token = match.kwargs["token"]
    if spoil == "expired":
        monkeypatch.setattr(stream_pass, "PASS_SECONDS", -1)
    elif spoil == "forged":
        token = token[:-1] + ("A" if token[-1] != "A" else "B")
    else:
        url2 = api.send(chat, "again")  # (the first turn has ended: a second one may start)
        assert url2.status_code == 202
        token = resolve(url2.json()["stream_url"]).kwargs["token"]
    spoilt = f"/api/agent/sessions/{match.kwargs['session_id']}/turns/{match.kwargs['turn_id']}/stream/{token}"
    with CaptureQueriesContext(connection) as ctx:
        response = api.get(spoilt)
        assert response.status_code == 200
        b"".join(response.streaming_content)
    assert "django_session" in tables_read(ctx)  # checked in full
    assert ApiClient(other_user).get(spoilt).status_code == 404


def test_the_policy_is_asked_afresh_even_with_a_pass(api, chat, script, monkeypatch):
    script(HI)
    url = api.send(chat, "hello").json()["stream_url"]
    policy = get_policy()
    monkeypatch.setattr(type(policy), "may_read", lambda self, session: False)  # e.g. a member removed since
    response = api.get(url)
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")


def test_a_pass_is_issued_only_with_a_session_cookie_and_holds_only_with_the_same_one(user, settings):
    factory = RequestFactory()
    bare = factory.get("/")
    bare.user = user
    assert stream_pass.issue(bare, "s1", "t1") is None

    signed_in = factory.get("/", HTTP_COOKIE=f"{settings.SESSION_COOKIE_NAME}=abc")
    signed_in.user = user
    token = stream_pass.issue(signed_in, "s1", "t1")
    assert stream_pass.holder(signed_in, token, "s1", "t1") == user.pk
    assert stream_pass.holder(signed_in, token, "s1", "t2") is None
    assert stream_pass.holder(signed_in, token, "s2", "t1") is None
    other_cookie = factory.get("/", HTTP_COOKIE=f"{settings.SESSION_COOKIE_NAME}=xyz")
    assert stream_pass.holder(other_cookie, token, "s1", "t1") is None
    assert stream_pass.holder(factory.get("/"), token, "s1", "t1") is None
    assert stream_pass.holder(signed_in, "not-a-pass", "s1", "t1") is None
    assert "abc" not in token  # the cookie itself is never in the URL
