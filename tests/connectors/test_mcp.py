"""`/mcp` through HTTP: the protocol, the catalogue capped per client, the audit, the limits, bad input."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from django.test import Client

from blog.models import Consent, Post, PostRevision, Seat
from connectors.models import McpCall
from tests.connectors.conftest import ALL, authorize_query, connect, pkce

pytestmark = pytest.mark.django_db
EVERY_TOOL = ["create_post", "delete_post", "get_post", "list_posts", "publish_post", "unpublish_post", "update_post"]


def test_initialize_negotiates_a_version_and_offers_tools(team):
    conn = connect(team.owner, team.blog.slug, ALL)
    for asked, agreed in [("2025-06-18", "2025-06-18"), ("2025-03-26", "2025-03-26"), ("1999-01-01", "2025-11-25")]:
        result = conn.rpc(
            "initialize", {"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        )["result"]
        assert result["protocolVersion"] == agreed
        assert result["capabilities"] == {"tools": {"listChanged": False}}
        assert result["serverInfo"]["name"] == "field-desk"
    assert conn.rpc("ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_the_catalogue_is_the_assistants(team):
    from blog.operations import OPERATIONS

    conn = connect(team.owner, team.blog.slug, ALL)
    tools = conn.rpc("tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == EVERY_TOOL
    for tool in tools:
        op = OPERATIONS[tool["name"]]
        assert (tool["description"], tool["inputSchema"]) == (op.description, op.input_schema)


def test_a_client_sees_and_uses_update_posts_remove_cover(team, tmp_path, settings, django_capture_on_commit_callbacks):
    """The same schema as the assistant's: a connected client may remove a cover too (no chat needed, unlike
    a new cover from an attachment), through the one write path, its file deleted after commit."""
    from django.core.files.base import ContentFile
    from django.core.files.storage import default_storage

    from tests import files

    settings.MEDIA_ROOT = str(tmp_path / "media")
    conn = connect(team.owner, team.blog.slug, ALL)
    tools = {t["name"]: t for t in conn.rpc("tools/list")["result"]["tools"]}
    properties = tools["update_post"]["inputSchema"]["properties"]
    assert list(properties) == ["post_id", "title", "body", "cover_attachment_id", "remove_cover"]
    assert properties["remove_cover"]["type"] == "boolean"
    key = default_storage.save(f"covers/{team.blog.pk}/c.png", ContentFile(files.png()))
    post = Post.objects.create(blog=team.blog, title="Walk", slug="walk", cover_ref=key, cover_type="image/png")
    with django_capture_on_commit_callbacks(execute=True):
        result = conn.call("update_post", {"post_id": post.pk, "remove_cover": True})["result"]
    assert (result["isError"], result["structuredContent"]["cover_removed"]) == (False, True)
    post.refresh_from_db()
    assert (post.cover_ref, default_storage.exists(key)) == ("", False)
    assert PostRevision.objects.get(post=post).before["cover"] == key


def test_calls_go_through_the_one_write_path_and_are_audited(team):
    conn = connect(team.owner, team.blog.slug, ALL)
    result = conn.call("create_post", {"title": "Via MCP", "body": "Hi"})["result"]
    post = Post.objects.get(blog=team.blog, title="Via MCP")
    assert result["isError"] is False
    assert result["structuredContent"]["id"] == post.pk
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    listed = conn.call("list_posts")["result"]["structuredContent"]
    assert [p["title"] for p in listed["items"]] == ["Via MCP"]  # a list comes back wrapped like the assistant's
    revision = PostRevision.objects.get(post=post)
    consent = Consent.objects.get(client=conn.client_id)
    assert (revision.user, revision.consent, revision.via_assistant) == (team.owner, consent, True)
    assert revision.actor_label == "Test Client for owner"
    call = McpCall.objects.filter(tool="create_post").get()
    assert (call.user, call.blog, call.client_id, call.client_name) == (
        team.owner,
        team.blog,
        conn.client_id,
        "Test Client",
    )
    assert (call.input, call.status) == ({"title": "Via MCP", "body": "Hi"}, "ok")
    assert Consent.objects.get(pk=consent.pk).last_used_at is not None


@pytest.mark.parametrize(
    ("spelled", "read"),
    [
        ("\\u0000", "\ufffd"),  # a NUL
        ("\\ud800", "\ufffd"),  # a lone surrogate, as JSON may escape one
        (b"\xed\xa0\x80".decode("latin-1"), "\ufffd"),  # one encoded in UTF-8, which Python's parser reads too
    ],
    ids=["nul", "escaped-surrogate", "encoded-surrogate"],
)
def test_a_nul_or_lone_surrogate_in_a_call_is_read_as_a_replacement_character(team, spelled, read):
    """PostgreSQL can hold neither, nor look one up: a title, a search or an argument's name with one was
    `-32603` "Internal error", a traceback, and no audit row (so the call went uncounted by the rate
    limit). Read as U+FFFD, as the chat's API reads a NUL."""
    conn = connect(team.owner, team.blog.slug, ALL)

    def call(name: str, arguments: str) -> dict:
        body = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "%s", "arguments": %s}}'
        response = conn.mcp(None, raw=(body % (name, arguments)).encode("latin-1"))
        assert response.status_code == 200
        return response.json()

    made = call("create_post", '{"title": "Odd@ title", "body": "b@"}'.replace("@", spelled))
    assert made["result"]["isError"] is False, made
    post = Post.objects.get(blog=team.blog)
    assert (post.title, post.body) == (f"Odd{read} title", f"b{read}")
    found = call("list_posts", '{"query": "Odd@"}'.replace("@", spelled))["result"]["structuredContent"]
    assert [p["id"] for p in found["items"]] == [post.pk]
    unknown = call("get_post", '{"post_id": %d, "x@": 1}'.replace("@", spelled) % post.pk)
    assert unknown["result"]["isError"] is True  # an argument the schema does not know, said to the client
    assert McpCall.objects.count() == 3


def test_the_audit_keeps_a_bounded_record_of_a_calls_input(team):
    # A viewer's read-only client may send 256 KB of arguments a call, refused or not, 60 calls a
    # minute: kept whole, one client alone would add 22 GB a day to the audit, which nothing deletes.
    conn = connect(team.viewer, team.blog.slug, ["posts:read"])
    junk = {"post_id": 1, "x" * 1000: "y" * 200_000, "tags": ["a", "b"], **{f"k{i}": i for i in range(500)}}
    result = conn.call("get_post", junk)["result"]
    assert result["isError"] is True  # (unknown arguments: refused by the schema)
    call = McpCall.objects.get(tool="get_post")
    assert call.status == "invalid"
    kept = json.dumps(call.input, ensure_ascii=False)
    assert len(kept) < 8_000
    # What a person auditing needs is still there: which post, what kind of junk, how much of it.
    assert (call.input["post_id"], call.input["tags"]) == (1, ["a", "b"])
    assert call.input["x" * 64] == "y" * 300 + "…"
    assert call.input["…"] == f"cut from {len(json.dumps(junk)):,} characters"
    assert len(call.input) == 21  # the first 20 arguments, and the note
    # A call of ordinary size is kept as it was sent.
    conn.call("list_posts", {"search": "light"})
    assert McpCall.objects.get(tool="list_posts").input == {"search": "light"}


def test_a_call_beyond_the_grant_is_refused_clearly(team):
    conn = connect(team.editor, team.blog.slug, ["posts:read", "posts:write"])
    assert conn.tool_names() == ["create_post", "get_post", "list_posts", "update_post"]
    post = Post.objects.create(blog=team.blog, title="Draft", slug="draft")
    result = conn.call("publish_post", {"post_id": post.pk})["result"]
    assert result["isError"] is True
    assert result["structuredContent"] == {
        "error": "Not allowed: publish_post needs the posts:publish permission, which isn't granted."
    }
    assert McpCall.objects.get(tool="publish_post").status == "denied"


def test_the_seat_caps_the_client_live(team):
    conn = connect(team.editor, team.blog.slug, ALL)
    assert conn.tool_names() == EVERY_TOOL
    Seat.objects.filter(user=team.editor, blog=team.blog).update(role=Seat.AUTHOR)
    assert conn.tool_names() == ["create_post", "get_post", "list_posts", "update_post"]
    Seat.objects.filter(user=team.editor, blog=team.blog).update(role=Seat.VIEWER)
    assert conn.tool_names() == ["get_post", "list_posts"]
    assert conn.call("create_post", {"title": "x"})["result"]["isError"] is True


def test_a_viewer_connects_read_only(team):
    conn = connect(team.viewer, team.blog.slug, ["posts:read"])
    assert conn.tool_names() == ["get_post", "list_posts"]
    assert conn.call("create_post", {"title": "Nope"})["result"]["isError"] is True
    assert not Post.objects.exists()


def test_a_token_for_one_blog_cannot_touch_another(team, other_team, django_user_model):
    Seat.objects.create(blog=other_team.blog, user=team.owner, role=Seat.OWNER)
    secret = Post.objects.create(blog=other_team.blog, title="Elsewhere only", slug="elsewhere-only")
    conn = connect(team.owner, team.blog.slug, ALL)
    assert conn.call("list_posts")["result"]["structuredContent"] == {"items": [], "total": 0}
    result = conn.call("get_post", {"post_id": secret.pk})["result"]
    assert result["structuredContent"] == {"error": f"There is no post with id {secret.pk} on this blog."}
    assert conn.call("delete_post", {"post_id": secret.pk})["result"]["isError"] is True
    assert Post.objects.filter(pk=secret.pk).exists()


def test_bad_arguments_are_tool_errors_the_model_can_read(team):
    conn = connect(team.owner, team.blog.slug, ALL)
    result = conn.call("create_post", {"title": 7})["result"]
    assert result["isError"] is True and result["structuredContent"]["error"].startswith("Invalid input at title")
    assert McpCall.objects.get().status == "invalid"


@pytest.mark.parametrize(
    "raw, status, code",
    [
        (b"{not json", 400, -32700),
        (b"[]", 400, -32600),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', 400, -32600),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', 400, -32600),
        (b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}', 400, -32600),
        (b'"hello"', 400, -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "resources/list"}', 200, -32601),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}', 200, -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rm_rf"}}', 200, -32602),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_posts", "arguments": []}}',
            200,
            -32602,
        ),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 5}}', 200, -32602),
        # Nested past Python's recursion limit (was: 500, an HTML page and a RecursionError traceback)
        (b"[" * 5000, 400, -32700),
        # Nested deep but parseable: its audit row could not be written (was: 200 -32603 "Internal error", a
        # traceback logged, and no McpCall, so the call did not count toward the client's rate limit). Deeper than
        # MAX_DEPTH (64) and far from Python's recursion limit whatever the stack above the parse: at 900, one
        # more middleware in the chain (under coverage) made the parse itself recurse too deep (-32700).
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_posts", "arguments": '
            b'{"search": ' + b"[" * 300 + b"]" * 300 + b"}}}",
            400,
            -32600,
        ),
        # Python's parser takes NaN and Infinity, which JSON has not: the audit row (a JSON column) could not
        # be written (was: 200 -32603 "Internal error", a traceback, and no McpCall, so uncounted by the limit)
        *[
            (
                b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_post", "arguments": '
                b'{"post_id": ' + constant + b"}}}",
                400,
                -32700,
            )
            for constant in (b"NaN", b"Infinity", b"-Infinity")
        ],
    ],
)
def test_malformed_json_rpc_gets_a_clear_error_never_a_traceback(team, raw, status, code):
    conn = connect(team.owner, team.blog.slug, ALL)
    response = conn.mcp(None, raw=raw)
    assert response.status_code == status
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == code
    assert "Traceback" not in body["error"]["message"] and "pydantic" not in response.content.decode()


def test_notifications_and_responses_are_accepted_silently(team):
    conn = connect(team.owner, team.blog.slug, ALL)
    for message in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 3, "result": {}},
    ):
        response = conn.mcp(message)
        assert (response.status_code, response.content) == (202, b"")


def test_oversize_requests_are_refused(team, settings):
    settings.MCP_MAX_REQUEST_BYTES = 1000
    conn = connect(team.owner, team.blog.slug, ALL)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "create_post", "arguments": {"title": "x", "body": "y" * 2000}},
    }
    response = conn.mcp(body)
    assert response.status_code == 413 and response.json()["error"]["code"] == -32600
    assert not Post.objects.exists()


def test_get_is_not_a_stream_here_and_other_origins_are_refused(team):
    conn = connect(team.owner, team.blog.slug, ALL)
    assert Client().get("/mcp", HTTP_AUTHORIZATION=f"Bearer {conn.access_token}").status_code == 405
    assert (
        conn.mcp({"jsonrpc": "2.0", "id": 1, "method": "ping"}, HTTP_ORIGIN="https://evil.example").status_code == 403
    )
    assert conn.mcp({"jsonrpc": "2.0", "id": 1, "method": "ping"}, HTTP_ORIGIN="http://testserver").status_code == 200
    bad_version = conn.mcp({"jsonrpc": "2.0", "id": 1, "method": "ping"}, HTTP_MCP_PROTOCOL_VERSION="1999-01-01")
    assert bad_version.status_code == 400


def test_calls_are_rate_limited_per_client_and_user(team, settings):
    settings.MCP_CALLS_PER_MINUTE = 2
    conn = connect(team.owner, team.blog.slug, ALL)
    other = connect(team.owner, team.blog.slug, ALL)
    assert conn.call("list_posts")["result"]["isError"] is False
    assert conn.call("list_posts")["result"]["isError"] is False
    response = conn.mcp({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "list_posts"}})
    assert response.status_code == 429 and int(response["Retry-After"]) >= 1
    error = response.json()["error"]
    assert error["code"] == -32000 and error["data"]["code"] == "rate_limited"
    assert error["message"].startswith("Too many calls: this client may make 2 tool calls a minute.")
    assert other.call("list_posts")["result"]["isError"] is False  # another client has its own allowance
    assert McpCall.objects.filter(client_id=conn.client_id).count() == 2
    # Anyone may authorise a public client: another person's calls through it have their own allowance.
    theirs = connect(team.editor, team.blog.slug, ALL, client_id=conn.client_id)
    assert theirs.call("list_posts")["result"]["isError"] is False


def test_admins_read_the_audit_in_django_admin(team, admin_client):
    conn = connect(team.owner, team.blog.slug, ALL)
    conn.call("create_post", {"title": "Audited <b>"})
    page = admin_client.get("/admin/connectors/mcpcall/")
    assert page.status_code == 200
    assert b"create_post" in page.content and b"Test Client" in page.content
    call = McpCall.objects.get()
    detail = admin_client.get(f"/admin/connectors/mcpcall/{call.pk}/change/")
    assert detail.status_code == 200 and b"Audited &lt;b&gt;" in detail.content
    assert admin_client.post(f"/admin/connectors/mcpcall/{call.pk}/delete/").status_code == 403


def test_the_admin_names_the_audit_mcp_calls(admin_client):
    """The admin's index and list say "MCP calls", not Django's "Mcp calls" made from the class name."""
    index = admin_client.get("/admin/").content.decode()
    assert ">MCP calls</a>" in index and "Mcp calls" not in index
    assert "Select MCP call to view" in admin_client.get("/admin/connectors/mcpcall/").content.decode()


def test_leaving_the_blog_ends_the_clients_grant_and_tokens(team):
    from oauth2_provider.models import get_access_token_model

    conn = connect(team.editor, team.blog.slug, ALL)
    Seat.objects.get(user=team.editor, blog=team.blog).delete()
    assert conn.mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
    assert not Consent.objects.filter(client=conn.client_id).exists()  # (the blog drops a leaver's grants)
    assert not get_access_token_model().objects.filter(user=team.editor).exists()


def test_an_admins_revoke_ends_the_clients_tokens_as_the_persons_own_revoke_does(team, admin_client):
    """Revoked in the admin, not just refused while the grant stays revoked: when the person later
    connects the same client again, the tokens it held before the revoke still do not work."""
    from oauth2_provider.models import get_access_token_model

    conn = connect(team.owner, team.blog.slug, ALL)
    consent = Consent.objects.get(user=team.owner, client=conn.client_id)
    response = admin_client.post(
        "/admin/blog/consent/", {"action": "revoke", "_selected_action": [consent.pk], "index": 0}
    )
    assert response.status_code == 302
    assert conn.mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
    assert not get_access_token_model().objects.filter(user=team.owner, application__client_id=conn.client_id).exists()
    again = connect(team.owner, team.blog.slug, ALL, client_id=conn.client_id)  # the person connects it again
    assert again.tool_names() == EVERY_TOOL
    assert conn.mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
    refresh = {"grant_type": "refresh_token", "refresh_token": conn.refresh_token, "client_id": conn.client_id}
    assert Client().post("/oauth/token/", refresh).status_code == 400


def test_browser_writes_need_the_csrf_token(team):
    conn = connect(team.owner, team.blog.slug, ALL)
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(team.owner)
    response = browser.post(f"/blogs/{team.blog.slug}/clients/{conn.client_id}/", {"action": "revoke"})
    assert response.status_code == 403
    assert Consent.objects.get(client=conn.client_id).revoked_at is None
    url = "/oauth/authorize/?" + urlencode(authorize_query(conn.client_id, pkce()[1]))
    assert (
        browser.post(url, {"blog": team.blog.slug, "allow": ["posts:read"], "decision": "approve"}).status_code == 403
    )


def test_a_change_through_mcp_reaches_the_blogs_open_pages(team, django_capture_on_commit_callbacks):
    """The MCP path writes through blog.services like every other, so the blog's live channel hears it."""
    from agent import events
    from blog.live import channel_name

    conn = connect(team.owner, team.blog.slug, ALL)
    listener = events.subscribe(channel_name(team.blog))
    try:
        with django_capture_on_commit_callbacks(execute=True):
            conn.call("create_post", {"title": "Heard", "body": "Hi"})
        post = Post.objects.get(title="Heard")
        assert listener.wait(0) == [[{"type": "post.created", "id": post.pk}]]
    finally:
        events.unsubscribe(listener)


def test_history_names_a_connected_clients_changes_as_such(team):
    from tests.blog.conftest import browser

    conn = connect(team.owner, team.blog.slug, ALL)
    conn.call("create_post", {"title": "By a client", "body": "Hi"})
    post = Post.objects.get(title="By a client")
    html = browser(team.owner).get(f"/blogs/{team.blog.slug}/posts/{post.pk}/history/").content.decode()
    assert 'by Test Client for owner <span class="badge">connected client</span>' in html
