"""Importing a blog, in Chromium: its owner exports it, imports that ZIP back, and finds its posts again;
an editor has no Import link and no such page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.ui import BLOG, login, post_item, signed_in


@pytest.fixture(scope="module")
def server(server_factory):
    """A server of its own: the import doubles the blog's posts, which other tests' pages would show."""
    return server_factory("import", AGENT_BACKEND="demo")


def test_the_owner_imports_an_export_back_and_an_editor_cannot(server, page, browser, tmp_path):
    base = server.url
    login(page, base, "alice")
    page.goto(f"{base}/blogs/{BLOG}/")
    nav = page.get_by_role("navigation", name="Blog")
    with page.expect_download() as arrived:
        nav.get_by_role("link", name="Export").click()
    exported = tmp_path / arrived.value.suggested_filename
    arrived.value.save_as(exported)

    nav.get_by_role("link", name="Import").click()
    expect(page).to_have_url(f"{base}/blogs/{BLOG}/import/")
    keep = page.get_by_label("Keep published posts published")
    expect(keep).not_to_be_checked()
    page.get_by_label("ZIP archive or Markdown file").set_input_files(str(exported))
    keep.check()
    page.get_by_role("button", name="Import").click()

    expect(page).to_have_url(f"{base}/blogs/{BLOG}/")
    expect(page.locator(".flash")).to_contain_text("Imported 2 posts (1 kept published)")
    welcome = post_item(page, "Welcome to Field Notes")
    expect(welcome).to_have_count(2)  # the demo's post, and its copy (at an address of its own)
    expect(welcome.locator(".badge")).to_have_text(["Published", "Published"])
    expect(post_item(page, "Notes from the river").locator(".badge")).to_have_text(["Draft", "Draft"])

    with signed_in(browser, base, "bob") as bobs:
        bobs.goto(f"{base}/blogs/{BLOG}/")
        expect(bobs.get_by_role("navigation", name="Blog").get_by_role("link", name="Import")).to_have_count(0)
        assert bobs.goto(f"{base}/blogs/{BLOG}/import/").status == 404
