"""The official MCP SDK's client, unmodified, against a live gunicorn + gevent server.

Discovery from the 401, dynamic registration, authorization with PKCE through the real consent page
(answered by the demo users over HTTP), tokens, tools/list and tools/call; then the grant narrowed
and revoked on the Clients screen, each role's cap, and one blog's token against another blog.
"""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.connect import Connector, Person, run
from tests.servers import manage

BLOG = "field-notes"
ALL = ["posts:read", "posts:write", "posts:publish", "posts:delete"]
EVERY_TOOL = ["create_post", "delete_post", "get_post", "list_posts", "publish_post", "unpublish_post", "update_post"]
SECOND_BLOG = """
from django.contrib.auth import get_user_model
from blog.models import Blog, Post, Seat
alice = get_user_model().objects.get(username="alice")
blog, _ = Blog.objects.get_or_create(slug="second-desk", defaults={"title": "Second Desk", "owner": alice})
Seat.objects.get_or_create(user=alice, blog=blog, defaults={"role": "owner"})
Post.objects.get_or_create(blog=blog, slug="only-here", defaults={"title": "Only here", "author": alice})
"""


@pytest.fixture(scope="module")
def server(server_factory):
    server = server_factory("mcp", AGENT_BACKEND="demo", MCP_CALLS_PER_MINUTE="0")
    manage(server.env, server.log, "shell", "-c", SECOND_BLOG)
    return server


def tool_names(result) -> list[str]:
    return sorted(tool.name for tool in result.tools)


def rows(server, sql: str, *params):
    return server.database.query(sql, params)


def test_alice_connects_claude_style_and_her_grant_bites(server):
    base = server.url
    alice = Person(base, "alice")
    connector = Connector(base, alice, BLOG, ALL, name="Claude (SDK)")

    unauthenticated = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert unauthenticated.status_code == 401
    assert 'resource_metadata="' in unauthenticated.headers["www-authenticate"]

    async def first(client):
        listed = await client.list_tools()
        created = await client.call_tool("create_post", {"title": "Written by an MCP client"})
        return listed, created

    listed, created = run(lambda: connector.session(first))
    assert tool_names(listed) == EVERY_TOOL
    assert created.is_error is False
    assert created.structured_content["title"] == "Written by an MCP client"
    assert len(connector.authorizations) == 1  # discovered, registered and authorised once
    assert rows(
        server,
        "SELECT count(*) FROM blog_post p JOIN blog_blog b ON b.id = p.blog_id WHERE b.slug = %s AND p.title = %s",
        BLOG,
        "Written by an MCP client",
    ) == [(1,)]
    assert rows(
        server, "SELECT client_name, tool, status FROM connectors_mcpcall WHERE client_id = %s", connector.client_id
    ) == [("Claude (SDK)", "create_post", "ok")]
    assert "Claude (SDK)" in alice.clients_page(BLOG)

    alice.set_client_scopes(BLOG, connector.client_id, ["posts:read"])

    async def narrowed(client):
        return await client.list_tools(), await client.call_tool("create_post", {"title": "Not any more"})

    listed, refused = run(lambda: connector.session(narrowed))
    assert tool_names(listed) == ["get_post", "list_posts"]
    assert refused.is_error is True
    assert refused.structured_content == {
        "error": "Not allowed: create_post needs the posts:write permission, which isn't granted."
    }
    assert len(connector.authorizations) == 1  # the same token, narrowed on the server

    alice.revoke_client(BLOG, connector.client_id)
    old_token = httpx.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {connector.access_token}"},
    )
    assert old_token.status_code == 401 and 'error="invalid_token"' in old_token.headers["www-authenticate"]
    connector.allow_authorization = False

    async def after_revoke(client):
        return await client.list_tools()

    with pytest.raises(ExceptionGroup) as refused:
        run(lambda: connector.session(after_revoke))
    # The 401 sent the client back to ask the person, who is not asked again in this test.
    assert refused.group_contains(RuntimeError, match="not asked again")
    assert len(connector.authorizations) == 2


def test_bob_cannot_reach_past_his_seat(server):
    base = server.url
    bob = Person(base, "bob")
    connector = Connector(base, bob, BLOG, ["posts:read", "posts:write", "posts:publish"], name="Bob's client")
    listed = run(lambda: connector.session(lambda client: client.list_tools()))
    assert tool_names(listed) == [
        "create_post",
        "get_post",
        "list_posts",
        "publish_post",
        "unpublish_post",
        "update_post",
    ]
    manage(
        server.env,
        server.log,
        "shell",
        "-c",
        "from blog.models import Seat; Seat.objects.filter(user__username='bob').update(role='author')",
    )
    try:

        async def demoted(client):
            return await client.list_tools(), await client.call_tool("publish_post", {"post_id": 1})

        listed, refused = run(lambda: connector.session(demoted))
        assert tool_names(listed) == ["create_post", "get_post", "list_posts", "update_post"]
        assert refused.is_error is True and "posts:publish" in refused.structured_content["error"]
    finally:
        manage(
            server.env,
            server.log,
            "shell",
            "-c",
            "from blog.models import Seat; Seat.objects.filter(user__username='bob').update(role='editor')",
        )


def test_carol_connects_a_read_only_client(server):
    base = server.url
    carol = Person(base, "carol")
    connector = Connector(base, carol, BLOG, ["posts:read"], name="Carol's reader")

    async def work(client):
        return (
            await client.list_tools(),
            await client.call_tool("list_posts", {}),
            await client.call_tool("create_post", {"title": "x"}),
        )

    listed, posts, refused = run(lambda: connector.session(work))
    assert tool_names(listed) == ["get_post", "list_posts"]
    assert posts.is_error is False and posts.structured_content["items"]
    assert refused.is_error is True


def test_a_token_for_one_blog_cannot_touch_another(server):
    base = server.url
    alice = Person(base, "alice")
    connector = Connector(base, alice, BLOG, ALL, name="One-blog client")
    [(other_id,)] = rows(
        server, "SELECT p.id FROM blog_post p JOIN blog_blog b ON b.id = p.blog_id WHERE b.slug = 'second-desk'"
    )

    async def work(client):
        return (
            await client.call_tool("list_posts", {}),
            await client.call_tool("get_post", {"post_id": other_id}),
            await client.call_tool("delete_post", {"post_id": other_id}),
        )

    listed, read, deleted = run(lambda: connector.session(work))
    assert "Only here" not in [p["title"] for p in listed.structured_content["items"]]
    assert read.structured_content == {"error": f"There is no post with id {other_id} on this blog."}
    assert deleted.is_error is True
    assert rows(server, "SELECT count(*) FROM blog_post WHERE id = %s", other_id) == [(1,)]
