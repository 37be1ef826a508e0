"""The consent page and the Clients screen in Chromium, against a live server."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.connect import CALLBACK, Person
from tests.e2e.ui import BLOG, PASSWORD
from tests.servers import ARTIFACTS

ALL = ["posts:read", "posts:write", "posts:publish", "posts:delete"]


@pytest.fixture(scope="module")
def server(server_factory):
    return server_factory("mcp-ui", AGENT_BACKEND="demo", MCP_CALLS_PER_MINUTE="0")


def register(base: str, name: str) -> str:
    response = httpx.post(f"{base}/oauth/register/", json={"client_name": name, "redirect_uris": [CALLBACK]})
    assert response.status_code == 201
    return response.json()["client_id"]


def authorization(base: str, client_id: str) -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CALLBACK,
        "state": "s1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": f"{base}/mcp",
        "scope": " ".join(ALL),
    }
    return f"{base}/oauth/authorize/?{urlencode(query)}", verifier


def token_for(base: str, client_id: str, redirect: str, verifier: str) -> str:
    code = parse_qs(urlsplit(redirect).query)["code"][0]
    response = httpx.post(
        f"{base}/oauth/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": CALLBACK,
            "client_id": client_id,
            "code_verifier": verifier,
            "resource": f"{base}/mcp",
        },
    )
    assert response.status_code == 200
    return response.json()["access_token"]


def tools(base: str, token: str) -> httpx.Response:
    return httpx.post(
        f"{base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {token}"},
    )


def approve_in_browser(page, base: str, name: str, untick: list[str]) -> str:
    """Sign in from the consent link, answer the page; the access token the client then gets."""
    client_id = register(base, name)
    url, verifier = authorization(base, client_id)
    page.goto(url)
    if "/accounts/login/" in page.url:
        page.get_by_label("Username").fill("alice")
        page.get_by_label("Password").fill(PASSWORD)
        page.locator("main").get_by_role("button", name="Sign in").click()
    expect(page.locator("#client-name")).to_have_text(name)
    expect(page.locator("#redirect-host")).to_have_text("127.0.0.1:5999")
    expect(page.locator("#consent-blog")).to_have_text("Field Notes")
    for scope in ALL:
        expect(page.locator(f'#consent-form input[value="{scope}"]')).to_be_checked()
    for scope in untick:
        page.locator(f'#consent-form input[value="{scope}"]').uncheck()
    (ARTIFACTS / "screenshots").mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "screenshots" / f"consent-{name.replace(' ', '-')}.png"), full_page=True)
    # (nothing listens on the callback's port: the request the browser makes is the answer)
    with page.expect_request(re.compile(r"^http://127\.0\.0\.1:5999/callback\?")) as callback:
        page.get_by_role("button", name="Approve").click()
    return token_for(base, client_id, callback.value.url, verifier)


def test_the_consent_page_connects_a_client(server, page):
    token = approve_in_browser(page, server.url, "Claude", untick=["posts:delete"])
    listed = tools(server.url, token).json()["result"]["tools"]
    assert sorted(t["name"] for t in listed) == [
        "create_post",
        "get_post",
        "list_posts",
        "publish_post",
        "unpublish_post",
        "update_post",
    ]


def test_the_clients_screen_with_two_clients(server, page):
    base = server.url
    claude = approve_in_browser(page, base, "Claude desktop", untick=[])
    alice = Person(base, "alice")
    cursor_id = register(base, "Cursor")
    url, verifier = authorization(base, cursor_id)
    cursor = token_for(base, cursor_id, alice.consent(url, BLOG, ["posts:read", "posts:write"]), verifier)

    page.goto(f"{base}/blogs/{BLOG}/clients/")
    cards = page.locator("form.connected-client")
    card = {
        name: cards.filter(has=page.locator(".client-name", has_text=name)) for name in ("Claude desktop", "Cursor")
    }
    expect(card["Claude desktop"]).to_have_count(1)
    expect(card["Cursor"]).to_have_count(1)
    expect(card["Cursor"].locator(".effective-scopes")).to_have_text("can read, draft")
    expect(page.locator("#assistant-grant")).to_be_visible()  # the built-in assistant beside them

    card["Cursor"].locator('input[value="posts:write"]').uncheck()
    card["Cursor"].get_by_role("button", name="Save").click()
    expect(card["Cursor"].locator(".effective-scopes")).to_have_text("can read")
    assert sorted(t["name"] for t in tools(base, cursor).json()["result"]["tools"]) == ["get_post", "list_posts"]

    card["Claude desktop"].get_by_role("button", name="Revoke").click()
    expect(page.get_by_text("Claude desktop can no longer act for you on this blog.")).to_be_visible()
    expect(card["Claude desktop"]).to_have_count(0)
    assert tools(base, claude).status_code == 401
    assert tools(base, cursor).status_code == 200


def test_an_admin_sets_a_persons_password_then_ends_their_clients(server, page):
    """A suspected compromise: the admin sets bob's password (to the one he had, so the module's other
    tests are unchanged), is told his client still works, follows the link, confirms, and it is ended."""
    from tests.e2e.ui import login

    base = server.url
    bob = Person(base, "bob")
    client_id = register(base, "Bob's laptop")
    url, verifier = authorization(base, client_id)
    token = token_for(base, client_id, bob.consent(url, BLOG, ["posts:read"]), verifier)
    login(page, base, "admin")

    page.goto(f"{base}/admin/auth/user/?q=bob")
    page.locator("#result_list").get_by_role("link", name="bob", exact=True).click()
    expect(page.locator(".field-connected_clients")).to_contain_text("1 connected client")
    page.locator(".field-password").get_by_text("Reset password", exact=True).click()  # (a link; Django 6: role=button)
    page.locator("#id_password1").fill(PASSWORD)
    page.locator("#id_password2").fill(PASSWORD)
    page.get_by_role("button", name="Change password").click()
    warning = page.locator(".messagelist .warning", has_text="still works")
    expect(warning).to_have_text(
        "The user “bob” still has 1 connected client: it still works with its tokens, as a new password does not end it. "
        "Disconnect all connected clients"
    )
    assert tools(base, token).status_code == 200

    warning.get_by_role("link", name="Disconnect all connected clients").click()
    expect(page.locator("#content li")).to_have_text("bob: 1 connected client")
    page.get_by_role("button", name="Yes, disconnect them").click()
    expect(page.locator(".messagelist .success")).to_have_text("Disconnected 1 connected client of 1 person.")
    assert tools(base, token).status_code == 401
