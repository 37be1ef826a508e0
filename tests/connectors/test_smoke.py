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


def test_a_viewers_connected_client_offers_read_and_says_why_not_more(team):
    from django.test import Client

    from blog.models import Consent

    conn = connect(team.viewer, team.blog.slug, ["posts:read"])
    browser = Client()
    browser.force_login(team.viewer)
    page = browser.get(f"/blogs/{team.blog.slug}/clients/").content.decode()
    card = page[page.index('class="card stack connected-client"') :]
    card = card[: card.index("</form>")]
    assert '<input type="checkbox" name="scopes" value="posts:read" checked> Read your posts and drafts</label>' in card
    for scope, label, who in (
        ("posts:write", "Create and edit drafts", "owners, editors and authors"),
        ("posts:publish", "Publish and unpublish posts", "owners and editors"),
        ("posts:delete", "Delete posts", "owners and editors"),
    ):
        assert (
            f'<input type="checkbox" name="scopes" value="{scope}" disabled> {label}'
            f' <span class="why-not">(only {who} can)</span></label>'
        ) in card
    refused = browser.post(
        f"/blogs/{team.blog.slug}/clients/{conn.client_id}/",
        {"scopes": ["posts:read", "posts:write"], "action": "save"},
        follow=True,
    )
    assert "You can only grant what you can do yourself." in refused.content.decode()
    assert Consent.objects.get(user=team.viewer, client=conn.client_id).scopes == ["posts:read"]
    assert conn.tool_names() == ["get_post", "list_posts"]


def test_after_a_password_change_every_connected_client_can_be_disconnected_at_once(team, other_team):
    """The done page lists the clients the person connected, on every blog, each with its Clients
    screen; one button (a CSRF-checked POST) revokes them all, and their tokens stop working.
    Another person's clients are neither listed nor touched."""
    from django.test import Client

    from blog.grants import ASSISTANT
    from blog.models import Consent, Seat
    from blog.team import consent_grant
    from tests.blog.conftest import PASSWORD

    Seat.objects.create(blog=other_team.blog, user=team.owner, role=Seat.EDITOR, may_use_assistant=True)
    consent_grant(user=team.owner, blog=team.blog, client=ASSISTANT, scopes={"posts:read"})  # the site's own
    here = connect(team.owner, team.blog.slug, ALL)
    there = connect(team.owner, other_team.blog.slug, ["posts:read"])
    someone_elses = connect(team.editor, team.blog.slug, ["posts:read"])
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(team.owner)
    form = browser.get("/accounts/password_change/")
    csrf = form.cookies["csrftoken"].value
    changed = browser.post(
        "/accounts/password_change/",
        {"old_password": PASSWORD, "new_password1": "a-new-pass-5678", "new_password2": "a-new-pass-5678"},
        HTTP_X_CSRFTOKEN=csrf,
    )
    assert changed.status_code == 302
    done = browser.get(changed["Location"]).content.decode()
    assert done.count("<strong>Test Client</strong>") == 2
    assert (
        f'href="/blogs/{team.blog.slug}/clients/"' in done and f'href="/blogs/{other_team.blog.slug}/clients/"' in done
    )
    assert "Disconnect all 2 clients" in done
    assert browser.post("/accounts/clients/disconnect/").status_code == 403  # no CSRF token: refused
    assert here.tool_names()  # still connected
    after = browser.post("/accounts/clients/disconnect/", HTTP_X_CSRFTOKEN=csrf, follow=True).content.decode()
    assert "Disconnected 2 clients: they can no longer act for you." in after
    assert "No MCP client (Claude or another) is connected" in after
    for gone in (here, there):
        assert gone.mcp({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code == 401
    assert not Consent.objects.filter(user=team.owner, revoked_at__isnull=True).exclude(client=ASSISTANT).exists()
    assert Consent.objects.filter(user=team.owner, client=ASSISTANT, revoked_at__isnull=True).exists()  # kept
    assert someone_elses.tool_names() == ["get_post", "list_posts"]
    assert Client().post("/accounts/clients/disconnect/").status_code == 302  # signed out: to the sign-in page


def test_a_scope_granted_before_a_role_came_down_says_it_is_unused_and_dropped_on_save(team):
    """Bob, an editor, let his client publish; the owner then made him an author. His card shows publish
    checked and greyed: it says the grant is unused now and that Save drops it (disabled boxes are not sent)."""
    from django.test import Client

    from blog.models import Seat

    connect(team.editor, team.blog.slug, ["posts:read", "posts:write", "posts:publish"])
    Seat.objects.filter(pk=team.seat("editor").pk).update(role=Seat.AUTHOR)
    browser = Client()
    browser.force_login(team.editor)
    page = browser.get(f"/blogs/{team.blog.slug}/clients/").content.decode()
    card = page[page.index('class="card stack connected-client"') :]
    card = card[: card.index("</form>")]
    assert (
        '<input type="checkbox" name="scopes" value="posts:publish" checked disabled> Publish and unpublish posts'
        ' <span class="why-not">(only owners and editors can: allowed before, unused now, and dropped when you'
        " save)</span></label>"
    ) in card
    assert (
        '<input type="checkbox" name="scopes" value="posts:delete" disabled> Delete posts'
        ' <span class="why-not">(only owners and editors can)</span></label>'
    ) in card


def test_the_clients_screen_reads_every_clients_recent_actions_at_once(team, django_assert_num_queries):
    """Each connected client's card lists its five latest calls, newest first; read in one query for
    all the person's clients, not one per client."""
    from datetime import timedelta

    from django.utils import timezone

    from blog.models import Consent
    from connectors.clients import rows
    from connectors.models import McpCall

    now = timezone.now()
    for n in range(3):
        Consent.objects.create(user=team.owner, blog=team.blog, client=f"app-{n}", client_name=f"App {n}", scopes=ALL)
        for minute in range(7):
            McpCall.objects.create(
                user=team.owner,
                blog=team.blog,
                client_id=f"app-{n}",
                tool=f"call-{minute}",
                status=McpCall.OK,
                created_at=now - timedelta(minutes=minute),
            )
    McpCall.objects.create(user=team.editor, blog=team.blog, client_id="app-0", tool="not-mine", status=McpCall.OK)
    seat = team.seat("owner")
    with django_assert_num_queries(2):  # the grants, then every client's latest calls
        found = rows(team.owner, team.blog, seat)
    assert [[call.tool for call in row["recent"]] for row in found] == [[f"call-{m}" for m in range(5)]] * 3
