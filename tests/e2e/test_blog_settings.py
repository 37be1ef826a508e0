"""A person's own blog, in Chromium: started from the home page (its address made as the title is
typed), renamed on its Settings page, then deleted there by typing its address; its page still open
in another tab shows the new title (and, once deleted, says it no longer has access). alice says what
field-notes is about, and a visitor reads it on its public index. And field-notes handed over by alice to
bob, their open pages of it following."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.ui import BLOG, MARK_BLOG_LIVE, expect_blog_live, loads, login


@pytest.fixture(scope="module")
def server(server_factory):
    """A server of its own: the blog made and deleted here is in its person's home page meanwhile."""
    return server_factory("blog-settings", AGENT_BACKEND="demo")


def test_a_person_starts_renames_and_deletes_a_blog(server, page, context):
    base = server.url
    context.add_init_script(MARK_BLOG_LIVE)
    login(page, base, "bob")  # (an editor of field-notes, owner of nothing)
    with loads(page):  # (its scripts too: blog_new.js makes the address as the title is typed)
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
    page.get_by_label("Description").fill("Reeds & <b>rails</b>")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".flash")).to_contain_text("Saved the title and the description.")
    expect(page.get_by_role("textbox", name="Title")).to_have_value("Herons of the marsh")
    # The other tab, left open on the blog, shows the new title and description without a reload, as text.
    expect(other_tab.get_by_role("heading", level=1)).to_have_text("Herons of the marsh")
    expect(other_tab).to_have_title("Herons of the marsh · Field Desk")
    expect(other_tab.locator(".pane-head .blog-about")).to_have_text("Reeds & <b>rails</b>")
    expect(other_tab.locator(".pane-head .blog-about b")).to_have_count(0)

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


def test_alice_says_what_her_blog_is_about_and_readers_see_it(server, page, browser):
    """Typed on two lines in Settings, kept as one paragraph: under the title on her blog's page, and on its
    public index for a visitor (and as the page's description)."""
    base = server.url
    login(page, base, "alice")
    page.goto(f"{base}/blogs/{BLOG}/settings/")
    page.get_by_label("Description").fill("Notes from long walks\nnear the coast.")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".flash")).to_contain_text("Saved the description.")
    expect(page.get_by_label("Description")).to_have_value("Notes from long walks near the coast.")
    page.get_by_role("link", name="← Field Notes").click()
    expect(page.locator(".pane-head .blog-about")).to_have_text("Notes from long walks near the coast.")

    visitor = browser.new_context().new_page()
    try:
        visitor.goto(f"{base}/read/{BLOG}/")
        expect(visitor.get_by_role("heading", level=1)).to_have_text("Field Notes")
        expect(visitor.locator("main .blog-about")).to_have_text("Notes from long walks near the coast.")
        expect(visitor.locator('meta[name="description"]')).to_have_attribute(
            "content", "Notes from long walks near the coast."
        )
    finally:
        visitor.context.close()


def test_alice_hands_her_blog_over_to_bob_and_stays_on_as_an_editor(server, page, context, browser):
    """Chosen in the select, refused with a wrong username, then handed over: she lands on the blog's page,
    an editor there (no Settings), and bob, its owner now, finds Settings with her listed as an editor.
    Their pages of the blog left open follow without a reload: hers loses the owner's links, his gains them."""
    base = server.url
    context.add_init_script(MARK_BLOG_LIVE)
    bob_context = browser.new_context()
    bob_context.add_init_script(MARK_BLOG_LIVE)
    bob = bob_context.new_page()
    try:
        login(bob, base, "bob")
        bob.goto(f"{base}/blogs/{BLOG}/")
        blog_nav = bob.get_by_role("navigation", name="Blog")
        expect(blog_nav.get_by_role("link", name="All posts")).to_be_visible()
        expect(blog_nav.get_by_role("link", name="Settings")).to_have_count(0)
        expect_blog_live(bob)

        login(page, base, "alice")
        her_other_tab = context.new_page()
        her_other_tab.goto(f"{base}/blogs/{BLOG}/")
        her_nav = her_other_tab.get_by_role("navigation", name="Blog")
        expect(her_nav.get_by_role("link", name="Settings")).to_be_visible()
        expect_blog_live(her_other_tab)
        page.goto(f"{base}/blogs/{BLOG}/settings/")
        page.get_by_label("New owner", exact=True).select_option(label="bob (editor)")
        page.get_by_label("Type the new owner's username").fill("carol")
        page.get_by_role("button", name="Hand over this blog").click()
        expect(page.locator("#hand-over-error")).to_have_text(
            "Type bob's username, bob, to hand the blog over to them. Nothing changed."
        )
        expect(page.get_by_label("New owner", exact=True)).to_have_value(re.compile(r"^\d+$"))  # (bob still chosen)
        page.get_by_label("Type the new owner's username").fill("bob")
        page.get_by_role("button", name="Hand over this blog").click()

        expect(page).to_have_url(f"{base}/blogs/{BLOG}/")
        expect(page.locator(".flash")).to_contain_text("Handed Field Notes over to bob: you are an editor here now.")
        alice_nav = page.get_by_role("navigation", name="Blog")
        expect(alice_nav.get_by_role("link", name="All posts")).to_be_visible()
        expect(alice_nav.get_by_role("link", name="Settings")).to_have_count(0)
        expect(alice_nav.get_by_role("link", name="Members")).to_have_count(0)

        for owners_link in ("Members", "Export", "Import", "Settings"):  # (her tab opened before: no reload)
            expect(her_nav.get_by_role("link", name=owners_link)).to_have_count(0)
        expect(her_nav.get_by_role("link", name="All posts")).to_be_visible()
        for owners_link in ("Members", "Export", "Import"):  # (his page, open all along: no reload)
            expect(blog_nav.get_by_role("link", name=owners_link)).to_be_visible()
        blog_nav.get_by_role("link", name="Settings").click()
        expect(bob).to_have_url(f"{base}/blogs/{BLOG}/settings/")
        expect(bob.get_by_label("New owner", exact=True).get_by_role("option", name="alice (editor)")).to_have_count(1)
    finally:
        bob_context.close()
