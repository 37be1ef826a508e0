"""A person's own blog, in Chromium: started from the home page (its address made as the title is
typed), renamed on its Settings page, then deleted there by typing its address; its page still open
in another tab says it no longer has access."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.ui import MARK_BLOG_LIVE, expect_blog_live, login


@pytest.fixture(scope="module")
def server(server_factory):
    """A server of its own: the blog made and deleted here is in its person's home page meanwhile."""
    return server_factory("blog-settings", AGENT_BACKEND="demo")


def test_a_person_starts_renames_and_deletes_a_blog(server, page, context):
    base = server.url
    context.add_init_script(MARK_BLOG_LIVE)
    login(page, base, "bob")  # (an editor of field-notes, owner of nothing)
    page.get_by_role("link", name="New blog").click()
    expect(page).to_have_url(f"{base}/blogs/new/")
    page.get_by_label("Title").fill("Café Heron Log")
    address = page.get_by_label("Address")
    expect(address).to_have_value("cafe-heron-log")  # (made from the title as it is typed)
    address.fill("heron-log")
    page.get_by_label("Title").fill("Heron log")  # (an address typed by its person stays theirs)
    expect(address).to_have_value("heron-log")
    page.get_by_role("button", name="Start blog").click()

    expect(page).to_have_url(f"{base}/blogs/heron-log/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Heron log")
    other_tab = context.new_page()
    other_tab.goto(f"{base}/blogs/heron-log/")
    expect_blog_live(other_tab)

    page.get_by_role("navigation", name="Blog").get_by_role("link", name="Settings").click()
    expect(page).to_have_url(f"{base}/blogs/heron-log/settings/")
    title = page.get_by_role("textbox", name="Title")
    title.fill("Herons of the marsh")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".flash")).to_contain_text("Saved the title.")
    expect(page.get_by_role("textbox", name="Title")).to_have_value("Herons of the marsh")

    confirm = page.get_by_label("Type the blog's address")
    confirm.fill("Herons of the marsh")
    page.get_by_role("button", name="Delete this blog").click()
    expect(page.locator("#delete-error")).to_have_text(
        "Type the blog's address, heron-log, to delete it. Nothing was deleted."
    )
    page.get_by_label("Type the blog's address").fill("heron-log")
    page.get_by_role("button", name="Delete this blog").click()

    expect(page).to_have_url(f"{base}/")
    expect(page.locator(".flash")).to_contain_text("Deleted Herons of the marsh, with its posts and chats.")
    expect(page.locator("main").get_by_role("link", name="Herons of the marsh")).to_have_count(0)
    expect(other_tab.locator("#live-status")).to_contain_text("Live updates stopped: you no longer have access to")
