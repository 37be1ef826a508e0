"""Whole assistant turns on a blog through the HTTP API with the fake backend."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agent.approvals import CHANGED
from agent.backends import get_backend
from agent.models import Approval, Message, Session, Turn
from agent.tools import register, unregister
from blog.models import ChatLink, Consent, Post, PostRevision, Seat
from tests.blog.conftest import ALL, READ, make_post, set_consent
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

DONE_TOOLS = {"kind": "done", "stop_reason": "tool_use"}
DONE = {"kind": "done", "stop_reason": "end_turn"}
ALL_TOOLS = ["create_post", "delete_post", "get_post", "list_posts", "publish_post", "unpublish_post", "update_post"]
NOT_AVAILABLE = "The tool '{}' is not available to you here. Ask the user to grant it."


def tool(name, input, id):
    return {"kind": "tool_use", "id": id, "name": name, "input": input}


def say(text):
    return [{"kind": "text", "text": text}, DONE]


def names(events):
    return [n for n, _ in events]


def payloads(events, name):
    return [p for n, p in events if n == name]


def open_chat(api: ApiClient, slug: str) -> Session:
    response = api.post("/api/agent/sessions", {"blog": slug})
    assert response.status_code == 201, response.content
    return Session.objects.get(pk=response.json()["id"])


def assistant_messages(session):
    return list(Message.objects.filter(session=session, role=Message.ASSISTANT).order_by("position"))


@pytest.fixture
def no_approvals(settings):
    """Grant tests run publish/delete straight away; the approval flow has its own tests below."""
    settings.AGENT_CONFIRM_TOOLS = []


@pytest.fixture
def grant_tools(team):
    """Test-only tools that change the grant while a turn runs, as a person on the Clients screen would."""

    @register("revoke_my_grant", description="test: revoke the Consent")
    def revoke(session):
        Consent.objects.filter(user=session.user, client="").update(revoked_at=timezone.now(), scopes=[])
        return {"revoked": True}

    @register("narrow_to_read", description="test: narrow the Consent to posts:read")
    def narrow(session):
        Consent.objects.filter(user=session.user, client="").update(scopes=[READ])
        return {"narrowed": True}

    @register("make_me_viewer", description="test: the owner downgrades this member to viewer")
    def downgrade(session):
        Seat.objects.filter(user=session.user, blog=team.blog).update(role=Seat.VIEWER)
        return {"role": "viewer"}

    yield ["make_me_viewer", "narrow_to_read", "revoke_my_grant"]
    for name in ("revoke_my_grant", "narrow_to_read", "make_me_viewer"):
        unregister(name)


# Creating sessions ------------------------------------------------------------------------------------------


def test_owner_opens_a_blog_chat(team):
    api = ApiClient(team.owner)
    response = api.post("/api/agent/sessions", {"blog": "notes", "purpose": "chat"})
    assert response.status_code == 201
    session = Session.objects.get(pk=response.json()["id"])
    assert (session.user, session.purpose) == (team.owner, "chat")
    assert ChatLink.objects.get(session=session).blog == team.blog
    assert "“Notes”" in session.system_prompt and "helping owner" in session.system_prompt


@pytest.mark.parametrize("role", ["editor", "author"])
def test_allowed_member_opens_a_chat(team, role):
    assert ApiClient(team.user(role)).post("/api/agent/sessions", {"blog": "notes"}).status_code == 201


def test_viewer_is_forbidden(team):
    Seat.objects.filter(user=team.viewer).update(may_use_assistant=True)  # even with the flag set
    response = ApiClient(team.viewer).post("/api/agent/sessions", {"blog": "notes"})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    assert Session.objects.count() == 0


@pytest.mark.parametrize("role", ["editor", "author"])
def test_member_not_allowed_by_owner_is_forbidden(team, role):
    Seat.objects.filter(user=team.user(role)).update(may_use_assistant=False)
    response = ApiClient(team.user(role)).post("/api/agent/sessions", {"blog": "notes"})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    assert Session.objects.count() == 0


def test_a_blog_named_with_a_nul_character_is_not_found_not_a_server_error(team):
    """PostgreSQL refuses a NUL even in a query's parameter: the API's JSON strings keep it as U+FFFD
    (`agent.api.json_body`), so this names no blog. Was: a `500` and a traceback on PostgreSQL."""
    response = ApiClient(team.editor).post("/api/agent/sessions", {"blog": "notes\x00"})
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    assert Session.objects.count() == 0


def test_a_blog_named_with_a_lone_surrogate_is_not_found_not_a_server_error(team):
    """Half a UTF-16 pair (`\\ud800`) is valid JSON but no UTF-8 text: neither database can look it up.
    The API's JSON strings read it as U+FFFD, so this names no blog. Was: a `500` on SQLite and PostgreSQL."""
    response = ApiClient(team.editor).post("/api/agent/sessions", raw=b'{"blog": "notes\\ud800"}')
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    assert Session.objects.count() == 0


def test_non_member_gets_not_found(team):
    response = ApiClient(team.outsider).post("/api/agent/sessions", {"blog": "notes"})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert Session.objects.count() == 0


def test_unknown_blog_gets_not_found(team):
    response = ApiClient(team.owner).post("/api/agent/sessions", {"blog": "no-such-blog"})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("body", [{}, {"blog": ""}, {"blog": 5}, {"blog": "notes", "purpose": "admin"}])
def test_bad_session_requests(team, body):
    response = ApiClient(team.owner).post("/api/agent/sessions", body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"
    assert Session.objects.count() == 0


def test_anonymous_cannot_open_a_chat(team, client):
    response = client.post("/api/agent/sessions", data={"blog": "notes"}, content_type="application/json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"
    assert Session.objects.count() == 0


# Sending into a chat whose permission changed -----------------------------------------------------------------


def test_summon_permission_turned_off_after_session_was_created(team, script):
    script([say("hi")])
    api = ApiClient(team.editor)
    session = open_chat(api, "notes")
    Seat.objects.filter(user=team.editor).update(may_use_assistant=False)
    response = api.send(session, "hello?")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    assert Message.objects.filter(session=session).count() == 0
    assert Turn.objects.filter(session=session).count() == 0


def test_removed_member_can_neither_send_nor_read(team, script):
    """Not a member any more: the blog's chats are not theirs to see (404, as for anything that is not theirs)."""
    script([say("hi")])
    api = ApiClient(team.author)
    session = open_chat(api, "notes")
    assert api.turn(session, "first")[-1][0] == "done"
    team.seat("author").delete()
    response = api.send(session, "hello?")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    assert api.get(f"/api/agent/sessions/{session.pk}").status_code == 404
    turn = Message.objects.filter(session=session, role="user").first().turn
    assert api.get(f"/api/agent/sessions/{session.pk}/turns/{turn.pk}/stream").status_code == 404
    assert Message.objects.filter(session=session, role="user").count() == 1


def test_another_users_blog_chat_is_not_found(team, script):
    script([say("hi")])
    session = open_chat(ApiClient(team.owner), "notes")
    intruder = ApiClient(team.editor)
    assert intruder.send(session, "hi").status_code == 404
    assert intruder.get(f"/api/agent/sessions/{session.pk}").status_code == 404


# Whole turns ----------------------------------------------------------------------------------------------------


def test_owner_creates_then_publishes_through_tools(team, script, no_approvals):
    consent = set_consent(team.owner, team.blog, ALL)
    api = ApiClient(team.owner)
    session = open_chat(api, "notes")
    calls = [
        [tool("create_post", {"title": "Spring walk", "body": "Buds *everywhere*."}, "c1"), DONE_TOOLS],
        say("Drafted it."),
    ]
    script(calls)
    t0 = timezone.now()
    events = api.turn(session, "Draft a post about my spring walk")
    assert names(events) == ["tool_use", "tool_result", "effects", "token", "done"]
    post = Post.objects.get(blog=team.blog)
    assert (post.title, post.body, post.status, post.author) == (
        "Spring walk",
        "Buds *everywhere*.",
        "draft",
        team.owner,
    )
    assert events[0][1] == {
        "id": "c1",
        "name": "create_post",
        "input": {"title": "Spring walk", "body": "Buds *everywhere*."},
    }
    assert events[1][1] == {
        "id": "c1",
        "name": "create_post",
        "status": "ok",
        "result": {
            "id": post.pk,
            "title": "Spring walk",
            "status": "draft",
            "published_at": None,
            "updated_at": post.updated_at.isoformat(),
        },
    }
    assert events[2][1] == [{"type": "post.created", "id": post.pk}]
    revision = PostRevision.objects.get(post=post)
    assert (revision.action, revision.user, revision.via_assistant, revision.consent, revision.chat_session) == (
        "create",
        team.owner,
        True,
        consent,
        session,
    )
    assert revision.actor_label == "the assistant for owner"
    # The model never sees effects, and it was told which blog and user it serves.
    requests = get_backend().requests
    assert "_effects" not in str(requests[1]["messages"])
    assert requests[1]["messages"][-1]["parts"][0]["result"]["id"] == post.pk
    assert "“Notes”" in requests[0]["system"]
    assert [t["name"] for t in requests[0]["tools"]] == ALL_TOOLS
    consent.refresh_from_db()
    assert consent.last_used_at is not None and t0 <= consent.last_used_at <= timezone.now()

    script([*calls, [tool("publish_post", {"post_id": post.pk}, "c2"), DONE_TOOLS], say("Published.")])
    events = api.turn(session, "Publish it")
    assert names(events) == ["tool_use", "tool_result", "effects", "token", "done"]
    assert events[2][1] == [{"type": "post.published", "id": post.pk}]
    post.refresh_from_db()
    assert post.status == "published" and post.published_at is not None
    revision = PostRevision.objects.filter(post=post).first()
    assert (revision.action, revision.via_assistant, revision.consent, revision.chat_session) == (
        "publish",
        True,
        consent,
        session,
    )
    assert (revision.before["status"], revision.after["status"]) == ("draft", "published")
    # The transcript records the tools offered to each model call.
    body = api.transcript(session)
    offered = [m["tools_offered"] for m in body["messages"] if m["role"] == "assistant"]
    assert offered == [ALL_TOOLS] * 4


def test_effects_one_event_per_cycle(team, script, no_approvals):
    set_consent(team.editor, team.blog, ALL)
    draft = make_post(team.blog, "A draft")
    live = make_post(team.blog, "Live post", published=True)
    api = ApiClient(team.editor)
    session = open_chat(api, "notes")
    script(
        [
            [
                tool("update_post", {"post_id": draft.pk, "body": "New body"}, "u1"),
                tool("unpublish_post", {"post_id": live.pk}, "p1"),
                tool("list_posts", {}, "l1"),
                DONE_TOOLS,
            ],
            [tool("delete_post", {"post_id": draft.pk}, "d1"), DONE_TOOLS],
            [tool("list_posts", {}, "l2"), DONE_TOOLS],
            say("Done."),
        ]
    )
    events = api.turn(session, "tidy up")
    assert names(events) == [
        "tool_use",
        "tool_use",
        "tool_use",
        "tool_result",
        "tool_result",
        "tool_result",
        "effects",
        "tool_use",
        "tool_result",
        "effects",
        "tool_use",
        "tool_result",
        "token",
        "done",
    ]
    assert payloads(events, "effects") == [
        [{"type": "post.updated", "id": draft.pk}, {"type": "post.unpublished", "id": live.pk}],
        [{"type": "post.deleted", "id": draft.pk}],
    ]
    assert [r["status"] for r in payloads(events, "tool_result")] == ["ok"] * 5
    assert [p["id"] for p in payloads(events, "tool_result")[-1]["result"]["items"]] == [live.pk]
    assert not Post.objects.filter(pk=draft.pk).exists()
    assert list(PostRevision.objects.filter(blog=team.blog).order_by("pk").values_list("action", "via_assistant")) == [
        ("update", True),
        ("unpublish", True),
        ("delete", True),
    ]


def test_author_cannot_publish_or_delete_with_full_consent(team, script):
    set_consent(team.author, team.blog, ALL)
    draft = make_post(team.blog, "A draft")
    api = ApiClient(team.author)
    session = open_chat(api, "notes")
    script(
        [
            [
                tool("publish_post", {"post_id": draft.pk}, "p1"),
                tool("delete_post", {"post_id": draft.pk}, "d1"),
                DONE_TOOLS,
            ],
            say("I can't."),
        ]
    )
    events = api.turn(session, "publish and then delete")
    results = payloads(events, "tool_result")
    assert results == [
        {
            "id": "p1",
            "name": "publish_post",
            "status": "error",
            "result": {"error": NOT_AVAILABLE.format("publish_post")},
        },
        {
            "id": "d1",
            "name": "delete_post",
            "status": "error",
            "result": {"error": NOT_AVAILABLE.format("delete_post")},
        },
    ]
    assert "effects" not in names(events)
    draft.refresh_from_db()
    assert draft.status == "draft"
    assert PostRevision.objects.count() == 0
    assert [t["name"] for t in get_backend().requests[0]["tools"]] == [
        "create_post",
        "get_post",
        "list_posts",
        "update_post",
    ]


def test_member_without_consent_is_offered_nothing(team, script):
    api = ApiClient(team.editor)  # allowed to summon, but has granted nothing
    session = open_chat(api, "notes")
    script([[tool("create_post", {"title": "Sneaky"}, "c1"), DONE_TOOLS], say("ok")])
    events = api.turn(session, "write something")
    assert payloads(events, "tool_result")[0]["result"] == {"error": NOT_AVAILABLE.format("create_post")}
    assert get_backend().requests[0]["tools"] == []
    assert Post.objects.count() == 0
    assert api.transcript(session)["messages"][1]["tools_offered"] == []


def test_revocation_between_two_calls_of_one_response(team, script, grant_tools):
    consent = set_consent(team.owner, team.blog, ALL)
    api = ApiClient(team.owner)
    session = open_chat(api, "notes")
    script(
        [
            [tool("revoke_my_grant", {}, "r1"), tool("create_post", {"title": "After revoke"}, "c1"), DONE_TOOLS],
            [tool("create_post", {"title": "Second try"}, "c2"), DONE_TOOLS],
            say("I no longer have permission."),
        ]
    )
    events = api.turn(session, "go")
    results = payloads(events, "tool_result")
    assert results == [
        {"id": "r1", "name": "revoke_my_grant", "status": "ok", "result": {"revoked": True}},
        {
            "id": "c1",
            "name": "create_post",
            "status": "error",
            "result": {"error": NOT_AVAILABLE.format("create_post")},
        },
        {
            "id": "c2",
            "name": "create_post",
            "status": "error",
            "result": {"error": NOT_AVAILABLE.format("create_post")},
        },
    ]
    assert "effects" not in names(events)
    assert names(events)[-1] == "done"
    assert Post.objects.count() == 0
    assert PostRevision.objects.count() == 0
    offered = [m.tools_offered for m in assistant_messages(session)]
    assert offered == [sorted(ALL_TOOLS + grant_tools), grant_tools, grant_tools]
    consent.refresh_from_db()
    assert consent.revoked_at is not None


def test_narrowing_between_cycles_of_one_turn(team, script, grant_tools):
    set_consent(team.editor, team.blog, ALL)
    draft = make_post(team.blog, "A draft")
    api = ApiClient(team.editor)
    session = open_chat(api, "notes")
    script(
        [
            [tool("narrow_to_read", {}, "n1"), DONE_TOOLS],
            [
                tool("publish_post", {"post_id": draft.pk}, "p1"),
                tool("get_post", {"post_id": draft.pk}, "g1"),
                DONE_TOOLS,
            ],
            say("I may only read now."),
        ]
    )
    events = api.turn(session, "go")
    results = payloads(events, "tool_result")
    assert [(r["id"], r["status"]) for r in results] == [("n1", "ok"), ("p1", "error"), ("g1", "ok")]
    assert results[1]["result"] == {"error": NOT_AVAILABLE.format("publish_post")}
    assert results[2]["result"]["title"] == "A draft"
    draft.refresh_from_db()
    assert draft.status == "draft"
    offered = [m.tools_offered for m in assistant_messages(session)]
    assert offered[1] == sorted(["get_post", "list_posts", *grant_tools])
    assert [t["name"] for t in get_backend().requests[1]["tools"]] == offered[1]


def test_seat_downgrade_between_calls_of_one_turn(team, script, grant_tools):
    set_consent(team.editor, team.blog, ALL)
    api = ApiClient(team.editor)
    session = open_chat(api, "notes")
    script(
        [
            [tool("make_me_viewer", {}, "v1"), tool("create_post", {"title": "As viewer"}, "c1"), DONE_TOOLS],
            [tool("list_posts", {}, "l1"), DONE_TOOLS],
            say("I can't act for a viewer."),
        ]
    )
    events = api.turn(session, "go")
    results = payloads(events, "tool_result")
    assert [(r["id"], r["status"], r["result"]) for r in results] == [
        ("v1", "ok", {"role": "viewer"}),
        ("c1", "error", {"error": NOT_AVAILABLE.format("create_post")}),
        ("l1", "error", {"error": NOT_AVAILABLE.format("list_posts")}),
    ]
    assert Post.objects.count() == 0
    offered = [m.tools_offered for m in assistant_messages(session)]
    assert offered == [sorted(ALL_TOOLS + grant_tools), grant_tools, grant_tools]
    # Now a viewer: no further messages in this chat.
    response = api.send(session, "and now?")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"


def test_consent_last_used_is_stamped_by_tool_runs_to_the_minute(team, script):
    from datetime import timedelta

    consent = set_consent(team.owner, team.blog, [READ])
    api = ApiClient(team.owner)
    session = open_chat(api, "notes")
    script([[tool("list_posts", {}, "l1"), DONE_TOOLS], say("none")] * 3)
    assert consent.last_used_at is None
    t0 = timezone.now()
    api.turn(session, "list")
    consent.refresh_from_db()
    assert t0 <= consent.last_used_at <= timezone.now()

    # Within the minute the stamp stands (one write a minute, not one per call)...
    recent = timezone.now() - timedelta(seconds=30)
    Consent.objects.filter(pk=consent.pk).update(last_used_at=recent)
    api.turn(session, "again")
    consent.refresh_from_db()
    assert consent.last_used_at == recent
    # ...and a run after it stamps again.
    Consent.objects.filter(pk=consent.pk).update(last_used_at=timezone.now() - timedelta(minutes=2))
    t1 = timezone.now()
    api.turn(session, "and again")
    consent.refresh_from_db()
    assert t1 <= consent.last_used_at <= timezone.now()


def test_tool_error_from_operation_reaches_the_model(team, script, no_approvals):
    set_consent(team.owner, team.blog, ALL)
    live = make_post(team.blog, "Live post", published=True)
    api = ApiClient(team.owner)
    session = open_chat(api, "notes")
    script(
        [
            [tool("publish_post", {"post_id": live.pk}, "p1"), tool("get_post", {"post_id": 999999}, "g1"), DONE_TOOLS],
            say("Already live."),
        ]
    )
    events = api.turn(session, "publish")
    assert payloads(events, "tool_result") == [
        {
            "id": "p1",
            "name": "publish_post",
            "status": "error",
            "result": {"error": "“Live post” is already published."},
        },
        {
            "id": "g1",
            "name": "get_post",
            "status": "error",
            "result": {"error": "There is no post with id 999999 on this blog."},
        },
    ]
    tool_message = get_backend().requests[1]["messages"][-1]
    assert [p["status"] for p in tool_message["parts"]] == ["error", "error"]
    assert PostRevision.objects.count() == 0


def test_transcript_shows_tool_parts(team, script):
    set_consent(team.owner, team.blog, ALL)
    api = ApiClient(team.owner)
    session = open_chat(api, "notes")
    script([[tool("create_post", {"title": "T"}, "c1"), DONE_TOOLS], say("ok")])
    api.turn(session, "go")
    post = Post.objects.get()
    messages = api.transcript(session)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[1]["parts"] == [{"type": "tool_use", "id": "c1", "name": "create_post", "input": {"title": "T"}}]
    result_part = messages[2]["parts"][0]
    assert (result_part["type"], result_part["tool_use_id"], result_part["status"]) == ("tool_result", "c1", "ok")
    assert result_part["result"]["id"] == post.pk
    assert "_effects" not in result_part["result"]


# Human approval of publish/delete: the approved call runs under the grant as it stands when it runs -----------------


def approve(api, session, approval_id, yes=True):
    return api.post(f"/api/agent/sessions/{session.pk}/approvals/{approval_id}", {"approve": yes})


def publish_awaiting_approval(team, script, user):
    draft = make_post(team.blog, "A draft")
    api = ApiClient(user)
    session = open_chat(api, "notes")
    script([[tool("publish_post", {"post_id": draft.pk}, "p1"), DONE_TOOLS], say("Done.")])
    events = api.turn(session, "publish my draft")
    assert names(events) == ["tool_use", "confirm"]
    [pending] = events[1][1]["approvals"]
    assert (pending["name"], pending["input"]) == ("publish_post", {"post_id": draft.pk})
    draft.refresh_from_db()
    assert draft.status == "draft"
    assert PostRevision.objects.count() == 0
    return api, session, draft, pending["id"]


def test_approved_publish_runs_as_the_assistant(team, script, approvals_on):
    consent = set_consent(team.owner, team.blog, ALL)
    api, session, draft, approval_id = publish_awaiting_approval(team, script, team.owner)
    response = approve(api, session, approval_id)
    assert response.status_code == 202
    events = api.events(response.json()["stream_url"])
    assert names(events) == ["tool_result", "effects", "token", "done"]
    assert events[0][1]["status"] == "ok"
    assert events[1][1] == [{"type": "post.published", "id": draft.pk}]
    draft.refresh_from_db()
    assert draft.status == "published"
    revision = PostRevision.objects.get()
    assert (revision.action, revision.user, revision.via_assistant, revision.consent, revision.chat_session) == (
        "publish",
        team.owner,
        True,
        consent,
        session,
    )


def test_revoked_between_confirm_and_approval(team, script, approvals_on):
    set_consent(team.owner, team.blog, ALL)
    api, session, draft, approval_id = publish_awaiting_approval(team, script, team.owner)
    from tests.blog.conftest import browser

    browser(team.owner).post("/blogs/notes/clients/", {"action": "revoke"})
    response = approve(api, session, approval_id)
    assert response.status_code == 202
    events = api.events(response.json()["stream_url"])
    assert events[0] == (
        "tool_result",
        {
            "id": "p1",
            "name": "publish_post",
            "status": "error",
            "result": {"error": NOT_AVAILABLE.format("publish_post")},
        },
    )
    assert "effects" not in names(events)
    draft.refresh_from_db()
    assert draft.status == "draft"
    assert PostRevision.objects.count() == 0


def test_downgraded_between_confirm_and_approval(team, script, approvals_on):
    set_consent(team.editor, team.blog, ALL)
    api, session, draft, approval_id = publish_awaiting_approval(team, script, team.editor)
    Seat.objects.filter(user=team.editor).update(role=Seat.AUTHOR)  # still may summon, but may not publish
    response = approve(api, session, approval_id)
    assert response.status_code == 202
    events = api.events(response.json()["stream_url"])
    assert events[0][1]["result"] == {"error": NOT_AVAILABLE.format("publish_post")}
    draft.refresh_from_db()
    assert draft.status == "draft"


def test_rejected_publish_changes_nothing(team, script, approvals_on):
    set_consent(team.owner, team.blog, ALL)
    api, session, draft, approval_id = publish_awaiting_approval(team, script, team.owner)
    response = approve(api, session, approval_id, yes=False)
    assert response.status_code == 202
    events = api.events(response.json()["stream_url"])
    assert events[0][1]["status"] == "error"
    draft.refresh_from_db()
    assert draft.status == "draft"
    assert PostRevision.objects.count() == 0


def test_ungranted_publish_is_refused_at_once_not_queued(team, script, approvals_on):
    set_consent(team.owner, team.blog, [READ])
    draft = make_post(team.blog, "A draft")
    api = ApiClient(team.owner)
    session = open_chat(api, "notes")
    script([[tool("publish_post", {"post_id": draft.pk}, "p1"), DONE_TOOLS], say("Not allowed.")])
    events = api.turn(session, "publish")
    assert names(events) == ["tool_use", "tool_result", "token", "done"]
    assert events[1][1]["result"] == {"error": NOT_AVAILABLE.format("publish_post")}


def test_summon_permission_withdrawn_between_confirm_and_approval(team, script, approvals_on):
    set_consent(team.editor, team.blog, ALL)
    api, session, draft, approval_id = publish_awaiting_approval(team, script, team.editor)
    Seat.objects.filter(user=team.editor).update(may_use_assistant=False)
    response = approve(api, session, approval_id)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "forbidden"
    draft.refresh_from_db()
    assert draft.status == "draft"
    assert PostRevision.objects.count() == 0


# Changing a published post is a publish-level act: it waits for approval, shows the diff, and is bound ----------


def update_awaiting_approval(team, script, user, live, change):
    api = ApiClient(user)
    session = open_chat(api, "notes")
    script([[tool("update_post", {"post_id": live.pk, **change}, "u1"), DONE_TOOLS], say("Done.")])
    events = api.turn(session, "fix the live post")
    assert names(events) == ["tool_use", "confirm"]
    [pending] = events[1][1]["approvals"]
    return api, session, pending


def test_updating_a_published_post_waits_for_approval_and_shows_the_change(team, script, approvals_on):
    set_consent(team.owner, team.blog, ALL)
    live = make_post(team.blog, "Live post", "First line.\nSecond line.", published=True)
    api, session, pending = update_awaiting_approval(
        team, script, team.owner, live, {"title": "Live <post>", "body": "First line.\nA <script>x</script> line."}
    )
    assert pending["description"] == "Change the published post “Live post”"
    assert pending["detail"].splitlines() == [
        "Title:",
        "- Live post",
        "+ Live <post>",
        "Body:",
        "  First line.",
        "- Second line.",
        "+ A <script>x</script> line.",
    ]
    live.refresh_from_db()
    assert (live.title, live.body) == ("Live post", "First line.\nSecond line.")  # nothing applied yet
    events = api.events(approve(api, session, pending["id"]).json()["stream_url"])
    assert names(events) == ["tool_result", "effects", "token", "done"]
    live.refresh_from_db()
    assert (live.title, live.body, live.status) == (
        "Live <post>",
        "First line.\nA <script>x</script> line.",
        "published",
    )


def test_a_live_post_cannot_be_rewritten_unseen_by_taking_it_offline_first(team, script, approvals_on):
    """Unpublish, rewrite as a draft, publish again, over three answers: taking the post offline
    waits for a person, and publishing it again shows what changed since it was live."""
    set_consent(team.owner, team.blog, ALL)
    live = make_post(team.blog, "Live post", "Kind words.", published=True)
    api = ApiClient(team.owner)
    session = open_chat(api, "notes")
    script(
        [
            [tool("unpublish_post", {"post_id": live.pk}, "u1"), DONE_TOOLS],
            say("Taken offline."),
            [tool("update_post", {"post_id": live.pk, "body": "Buy cheap pills."}, "e1"), DONE_TOOLS],
            say("Rewritten."),
            [tool("publish_post", {"post_id": live.pk}, "p1"), DONE_TOOLS],
            say("Published."),
        ]
    )
    events = api.turn(session, "take it offline")
    assert names(events) == ["tool_use", "confirm"]
    [pending] = events[1][1]["approvals"]
    assert (pending["name"], pending["description"]) == ("unpublish_post", "Unpublish the post “Live post”")
    live.refresh_from_db()
    assert live.status == "published"
    api.events(approve(api, session, pending["id"]).json()["stream_url"])
    assert names(api.turn(session, "rewrite it")) == ["tool_use", "tool_result", "effects", "token", "done"]
    events = api.turn(session, "publish it")
    [pending] = events[1][1]["approvals"]
    assert pending["description"] == "Publish the post “Live post”"
    assert pending["detail"].splitlines() == [
        "Changed since it was last published:",
        "Body:",
        "- Kind words.",
        "+ Buy cheap pills.",
    ]


def test_publishing_a_post_for_the_first_time_shows_no_change(team, script, approvals_on):
    set_consent(team.owner, team.blog, ALL)
    api, session, draft, approval_id = publish_awaiting_approval(team, script, team.owner)
    assert Approval.objects.get(pk=approval_id).detail == ""


def test_the_approval_card_shows_the_diff_escaped(team, script, approvals_on):
    from tests.blog.conftest import browser

    set_consent(team.owner, team.blog, ALL)
    live = make_post(team.blog, "Live post", "Old body", published=True)
    api, session, pending = update_awaiting_approval(
        team, script, team.owner, live, {"body": "<img src=x onerror=alert(1)>"}
    )
    page = browser(team.owner).get(f"/blogs/notes/?chat={session.pk}").content.decode()
    assert "Change the published post “Live post”" in page
    assert '<span class="diff-del">- Old body</span>' in page
    assert '<span class="diff-add">+ &lt;img src=x onerror=alert(1)&gt;</span>' in page
    assert "<img src=x" not in page


def test_a_change_to_the_post_after_the_prompt_voids_the_approval(team, script, approvals_on):
    from tests.blog.conftest import browser

    set_consent(team.owner, team.blog, ALL)
    live = make_post(team.blog, "Live post", "Old body", published=True)
    api, session, pending = update_awaiting_approval(team, script, team.owner, live, {"body": "Assistant's body"})
    browser(team.editor).post(f"/blogs/notes/posts/{live.pk}/edit/", {"title": "Live post", "body": "Editor's body"})
    events = api.events(approve(api, session, pending["id"]).json()["stream_url"])
    assert events[0] == (
        "tool_result",
        {"id": "u1", "name": "update_post", "status": "error", "result": {"error": CHANGED}},
    )
    assert "effects" not in names(events)
    live.refresh_from_db()
    assert live.body == "Editor's body"
    assert get_backend().requests[-1]["messages"][-1]["parts"][0]["result"] == {"error": CHANGED}


def test_a_change_after_a_publish_prompt_voids_it_too(team, script, approvals_on):
    """ "Publish 'X'" is approved for the X the person saw: an edit in between voids it."""
    from tests.blog.conftest import browser

    set_consent(team.owner, team.blog, ALL)
    api, session, draft, approval_id = publish_awaiting_approval(team, script, team.owner)
    browser(team.author).post(f"/blogs/notes/posts/{draft.pk}/edit/", {"title": "A draft", "body": "Swapped in"})
    events = api.events(approve(api, session, approval_id).json()["stream_url"])
    assert events[0][1]["result"] == {"error": CHANGED}
    draft.refresh_from_db()
    assert draft.status == "draft"


def test_updating_a_draft_runs_at_once(team, script, approvals_on):
    set_consent(team.owner, team.blog, ALL)
    draft = make_post(team.blog, "A draft")
    api = ApiClient(team.owner)
    session = open_chat(api, "notes")
    script([[tool("update_post", {"post_id": draft.pk, "body": "Better"}, "u1"), DONE_TOOLS], say("Done.")])
    assert names(api.turn(session, "fix the draft")) == ["tool_use", "tool_result", "effects", "token", "done"]
    draft.refresh_from_db()
    assert draft.body == "Better"


def test_without_the_publish_scope_a_live_update_is_refused_at_once_not_queued(team, script, approvals_on):
    set_consent(team.author, team.blog, ALL)  # capped by the author's seat: read and write
    live = make_post(team.blog, "Live post", "Old body", published=True)
    api = ApiClient(team.author)
    session = open_chat(api, "notes")
    script([[tool("update_post", {"post_id": live.pk, "body": "Defaced"}, "u1"), DONE_TOOLS], say("Can't.")])
    events = api.turn(session, "change it")
    assert names(events) == ["tool_use", "tool_result", "token", "done"]
    assert events[1][1]["result"] == {
        "error": "“Live post” is published: changing it needs the right to publish, which isn't granted."
    }
    live.refresh_from_db()
    assert live.body == "Old body"


def test_a_long_bodys_diff_keeps_two_lines_around_each_change(team):
    from blog.chat import change_detail

    post = make_post(team.blog, "Long", "\n".join(f"line {i}" for i in range(20)), published=True)
    new_body = post.body.replace("line 10", "LINE 10")
    assert change_detail(post, "Long", new_body).splitlines() == [
        "Body:",
        "  …",
        "  line 8",
        "  line 9",
        "- line 10",
        "+ LINE 10",
        "  line 11",
        "  line 12",
        "  …",
    ]


def test_one_answer_asking_for_many_posts_makes_at_most_the_turns_limit(team, script, settings):
    """The probe of issue 22: 300 `create_post` calls in one answer made 300 posts. Reading is not limited."""
    settings.AGENT_MAX_MUTATIONS_PER_TURN = 8
    set_consent(team.owner, team.blog, ALL)
    api = ApiClient(team.owner)
    session = open_chat(api, "notes")
    calls = [tool("create_post", {"title": f"Spam {i}", "body": "x"}, f"c{i}") for i in range(12)]
    script([[*calls, tool("list_posts", {}, "l1"), DONE_TOOLS], say("Made some.")])
    events = api.turn(session, "Make twelve posts")
    assert Post.objects.filter(blog=team.blog).count() == 8
    statuses = {p["id"]: p["status"] for p in payloads(events, "tool_result")}
    assert [statuses[f"c{i}"] for i in range(12)] == ["ok"] * 8 + ["error"] * 4
    assert statuses["l1"] == "ok"
