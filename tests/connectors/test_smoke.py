from __future__ import annotations

import pytest

from tests.connectors.conftest import ALL, connect

pytestmark = pytest.mark.django_db


def test_owner_connects_and_creates_a_post(team):
    conn = connect(team.owner, team.blog.slug, ALL)
    init = conn.rpc(
        "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    )
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert conn.tool_names() == [
        "create_post",
        "delete_post",
        "get_post",
        "list_posts",
        "publish_post",
        "unpublish_post",
        "update_post",
    ]
    out = conn.call("create_post", {"title": "Hello"})
    assert out["result"]["isError"] is False, out
    assert out["result"]["structuredContent"]["title"] == "Hello"


def test_clients_screen_narrows_and_revokes(team):
    from django.test import Client

    conn = connect(team.owner, team.blog.slug, ALL)
    browser = Client()
    browser.force_login(team.owner)
    page = browser.get(f"/blogs/{team.blog.slug}/clients/")
    assert b"Test Client" in page.content
    browser.post(f"/blogs/{team.blog.slug}/clients/{conn.client_id}/", {"scopes": ["posts:read"], "action": "save"})
    assert conn.tool_names() == ["get_post", "list_posts"]
    refused = conn.call("create_post", {"title": "x"})
    assert refused["result"]["isError"] is True
    browser.post(f"/blogs/{team.blog.slug}/clients/{conn.client_id}/", {"action": "revoke"})
    assert conn.mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401


def test_the_clients_screen_gives_the_address_to_connect_a_client_with(team):
    from django.test import Client

    browser = Client()
    browser.force_login(team.owner)
    page = browser.get(f"/blogs/{team.blog.slug}/clients/").content.decode()
    assert "No other clients are connected." in page
    assert '<code class="mcp-url">http://testserver/mcp</code>' in page  # the whole address, to paste as is
    connect(team.owner, team.blog.slug, ALL)
    page = browser.get(f"/blogs/{team.blog.slug}/clients/").content.decode()
    assert "Test Client" in page and "No other clients are connected." not in page
    assert '<code class="mcp-url">http://testserver/mcp</code>' in page  # and to connect another
