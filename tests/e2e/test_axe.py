"""An automated accessibility audit (axe-core, through axe-playwright-python) of every page a person meets,
each in a state that shows its interesting parts, at a desktop's width and at a phone's (the blog page and
the editor lay the assistant out differently there, tests/e2e/test_phone.py).

Signed out: the sign-in page (and after a failed sign-in), the public blog, a public post and the 404 page.
As alice, the owner: the blog page with the chat panel after an answered turn and with its list of earlier
chats open, then after a turn that waits on an approval card; the consent page a client sends her to; a
post's editor; its history and a comparison of two versions; the list of chats, a chat's name refused
there, and a search of them with a result; the Clients screen with a client connected; the Members screen; her blog's Settings, refused a
deletion and a hand-over (wrong confirmations: nothing changes). As carol, a viewer: the blog page.

No violation of impact "serious" or "critical" may remain; the moderate and minor ones are written, with
the rest, to artifacts/axe/<page>.json. Django's own admin is not audited: its templates are Django's, not
this project's.

axe is put in the page with `page.evaluate` (what `Axe.run` does): the Chrome DevTools protocol's
evaluation is not subject to the page's Content-Security-Policy (script-src 'self'), so the site's CSP is
audited as it is served, without `bypass_csp`.
"""

from __future__ import annotations

import json
import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from tests.e2e.conftest import NO_LIMITS
from tests.e2e.test_connectors_ui import authorization, register
from tests.e2e.test_phone import PHONE
from tests.e2e.ui import BLOG, PASSWORD, ask, loads, login, new_chat, open_blog, post_item
from tests.servers import ARTIFACTS

AXE = Axe()
SERIOUS = ("serious", "critical")
DESKTOP = {"viewport": {"width": 1280, "height": 900}}
WIDTHS = pytest.mark.parametrize("context_options", [DESKTOP, PHONE], ids=["desktop", "phone"])


@pytest.fixture(scope="module")
def server(server_factory):
    """A server of its own: these tests publish a post and connect a client, which other tests' pages would show."""
    return server_factory("axe", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", MCP_CALLS_PER_MINUTE="0", **NO_LIMITS)


def report(violations: list[dict]) -> str:
    """What to fix: each rule broken, how badly, where (axe's selectors) and what axe says about it."""
    lines = []
    for v in violations:
        lines.append(f"- {v['id']} ({v['impact']}): {v['help']} [{v['helpUrl']}]")
        for node in v["nodes"]:
            lines.append(f"    at {' '.join(map(str, node['target']))}")
            lines.append("      " + node.get("failureSummary", "").replace("\n", "\n      "))
    return "\n".join(lines)


def audit(page: Page, name: str) -> None:
    """Run axe on the page as it is now; fail on anything serious or critical, keep the rest on file."""
    expect(page.locator(".htmx-request, .htmx-added, .htmx-settling")).to_have_count(0)  # (nothing half-swapped)
    width = page.viewport_size["width"]
    results = AXE.run(page).response
    violations = results["violations"]
    folder = ARTIFACTS / "axe"
    folder.mkdir(parents=True, exist_ok=True)
    unsure = [  # (what axe could not decide alone: a colour over an image or another element, say)
        {"id": v["id"], "nodes": [{"target": n["target"], "html": n["html"], "why": n["any"]} for n in v["nodes"]]}
        for v in results["incomplete"]
    ]
    (folder / f"{name}-{width}.json").write_text(json.dumps({"violations": violations, "incomplete": unsure}, indent=2))
    serious = [v for v in violations if v["impact"] in SERIOUS]
    assert not serious, f"axe on {name} ({page.url}, {width}px wide):\n{report(serious)}"


def test_axe_runs_and_sees_under_the_sites_content_security_policy(server, page):
    """The audit is worth something only if axe runs in the page as served, CSP and all, and finds what is
    wrong: a picture without a text alternative, planted here, is reported."""
    response = page.goto(f"{server.url}/accounts/login/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.evaluate("() => document.querySelector('main').append(document.createElement('img'))")
    violations = AXE.run(page).response["violations"]
    found = {v["id"]: v["impact"] for v in violations}
    assert found.get("image-alt") == "critical", found
    said = report(violations)  # what a failing audit tells the developer: the rule, how bad, where, what to do
    assert "- image-alt (critical): Images must have alternative text" in said, said
    assert "    at img" in said and "Fix any of the following" in said, said


@WIDTHS
def test_the_signed_out_pages(server, page, context_options):
    base = server.url
    page.goto(f"{base}/")
    audit(page, "front-page")
    page.goto(f"{base}/accounts/login/")
    audit(page, "sign-in")

    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("not her password")
    page.locator("main").get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    audit(page, "sign-in-failed")

    page.goto(f"{base}/read/{BLOG}/")
    audit(page, "public-blog")
    page.locator("main article a, main li a").filter(has_text=re.compile(r"\w")).first.click()
    expect(page).to_have_url(re.compile(rf"/read/{BLOG}/[^/]+/$"))
    audit(page, "public-post")


def test_the_404_page(server, page):
    """The servers run with DEBUG, where Django answers 404 with its own page for the developer; the page a
    person meets is rendered here as production renders it (`page_not_found`, templates/404.html) and
    served at the server's address, so its stylesheet loads as it would."""
    from django.contrib.auth.models import AnonymousUser
    from django.http import Http404
    from django.test import RequestFactory
    from django.views.defaults import page_not_found

    request = RequestFactory().get("/no-such-page/")
    request.user = AnonymousUser()
    html = page_not_found(request, Http404()).content
    page.route(
        f"{server.url}/no-such-page/", lambda route: route.fulfill(status=404, body=html, content_type="text/html")
    )
    page.goto(f"{server.url}/no-such-page/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Nothing here")
    audit(page, "404")


@WIDTHS
def test_alices_pages(server, page, context_options):
    base = server.url
    width = context_options["viewport"]["width"]
    title = f"Axe check {width}"
    login(page, base, "alice")
    page.goto(f"{base}/")
    audit(page, "home")
    new_chat(page, base)
    ask(page, "list my posts")
    audit(page, "blog-chat-answered")

    ask(page, f"draft a post titled {title}")
    asked = ask(page, f"publish {title}").get_attribute("id")
    card = page.locator(f"#{asked} .approval")  # (the answer after it will be the last)
    expect(card).to_contain_text("Needs your OK")
    audit(page, "blog-approval-card")
    card.get_by_role("button", name="Reject").click()
    expect(card).to_have_text("Rejected.")
    audit(page, "blog-approval-decided")

    new_chat(page, base)  # (a second chat: the panel lists the earlier ones)
    page.locator("#assistant .history summary").click()
    expect(page.locator("#assistant .history ul")).to_be_visible()
    audit(page, "blog-earlier-chats-open")
    page.locator("#assistant .history summary").click()

    with loads(page):  # (its scripts too: htmx previews the body typed)
        post_item(page, title).get_by_role("link", name="Edit", exact=True).click()
    body = page.get_by_label("Body (markdown)")
    body.fill("Herons at **dawn**, standing in the shallows.")
    expect(page.locator("#preview strong")).to_have_text("dawn")
    audit(page, "editor")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".flash")).to_contain_text("Saved")

    post_item(page, title).get_by_role("link", name="History").click()
    expect(page.get_by_role("link", name="What changed").first).to_be_visible()
    audit(page, "history")
    page.get_by_role("link", name="What changed").first.click()
    expect(page).to_have_url(re.compile(r"/history/compare/\?change="))
    audit(page, "compare")

    open_blog(page, base)
    post_item(page, title).get_by_role("link", name="Delete").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(title)
    audit(page, "delete-confirm")

    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    audit(page, "editor-new")
    page.goto(f"{base}/blogs/{BLOG}/posts/999999/edit/")  # (a post deleted meanwhile)
    audit(page, "editor-refused")
    page.goto(f"{base}/blogs/{BLOG}/posts/all/")
    audit(page, "all-posts")
    page.goto(f"{base}/blogs/{BLOG}/posts/all/?q=river&status=draft")  # its search, with results
    audit(page, "all-posts-found")
    page.goto(f"{base}/blogs/{BLOG}/posts/all/?q={'x' * 201}&status=zz")  # and refused: a message, the words kept
    audit(page, "all-posts-refused")
    page.goto(f"{base}/blogs/{BLOG}/chats/")
    audit(page, "chats")
    rename = page.locator("details.rename").first
    rename.locator("summary").click()
    rename.get_by_role("textbox", name="New name").fill(" ")  # (refused: the field open, the refusal beside it)
    rename.get_by_role("button", name="Save name").click()
    expect(page.get_by_role("alert")).to_have_text("Give the chat a name.")
    audit(page, "chats-rename-refused")
    page.goto(f"{base}/blogs/{BLOG}/chats/?q=my+posts")  # its search, with a result (the match marked)
    expect(page.locator(".chat-snippet mark").first).to_have_text("my posts")
    audit(page, "chats-found")
    page.goto(f"{base}/accounts/password_change/")
    audit(page, "password-change")
    page.goto(f"{base}/blogs/{BLOG}/import/")
    audit(page, "import")
    page.get_by_label("ZIP archive or Markdown file").set_input_files(
        files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"not a post"}]
    )
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("alert")).to_be_visible()  # (refused: its message, the field marked)
    audit(page, "import-refused")

    page.goto(f"{base}/blogs/new/")
    audit(page, "blog-new")
    page.get_by_label("Title").fill("Axe notes")
    page.get_by_label("Address").fill("new")  # (reserved: refused beside its field, what was typed kept)
    page.get_by_role("button", name="Start blog").click()
    expect(page.get_by_role("alert")).to_be_visible()
    audit(page, "blog-new-refused")
    page.goto(f"{base}/blogs/{BLOG}/settings/")
    audit(page, "blog-settings")
    page.get_by_label("Type the blog's address").fill("not-this-one")
    page.get_by_role("button", name="Delete this blog").click()
    expect(page.get_by_role("alert")).to_be_visible()  # (nothing deleted: the confirmation was wrong)
    audit(page, "blog-delete-refused")
    page.get_by_label("New owner", exact=True).select_option(label="bob (editor)")
    page.get_by_label("Type the new owner's username").fill("not-bob")  # (refused: field-notes stays hers)
    page.get_by_role("button", name="Hand over this blog").click()
    expect(page.locator("#hand-over-error")).to_be_visible()
    audit(page, "blog-hand-over-refused")

    page.goto(f"{base}/blogs/{BLOG}/members/")
    audit(page, "members")
    page.get_by_label("Username").fill("nobody-here")
    page.get_by_role("button", name="Add", exact=True).click()
    expect(page.get_by_role("alert")).to_be_visible()
    audit(page, "members-failed-add")
    page.get_by_role("link", name="Remove carol").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Remove carol from Field Notes?")
    audit(page, "member-remove-confirm")

    # A client connects: her consent, then the Clients screen with it.
    url, _ = authorization(base, register(base, f"Axe client {width}"))
    page.goto(url)
    expect(page.locator("#client-name")).to_have_text(f"Axe client {width}")
    audit(page, "consent")
    page.route(re.compile(r"^http://127\.0\.0\.1:5999/"), lambda route: route.fulfill(body="Connected."))
    page.get_by_role("button", name="Approve").click()
    page.wait_for_url(re.compile(r"^http://127\.0\.0\.1:5999/callback\?"))
    page.goto(f"{base}/blogs/{BLOG}/clients/")
    expect(page.locator("form.connected-client")).not_to_have_count(0)
    audit(page, "clients")


@WIDTHS
def test_carols_blog_page(server, page, context_options):
    login(page, server.url, "carol", PASSWORD)
    open_blog(page, server.url)
    expect(page.locator("#post-list")).to_be_visible()
    audit(page, "blog-viewer")
