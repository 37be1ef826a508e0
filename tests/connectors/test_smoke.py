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
