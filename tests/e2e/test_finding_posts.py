"""Finding a post on the All posts page, in Chromium: type words, choose a status, search, clear; words
of a post's text find it, with the line that holds them."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.ui import BLOG, login


def test_a_member_searches_all_posts_and_clears_the_search(demo_server, page):
    base = demo_server.url
    login(page, base, "carol")  # a viewer searches too
    page.goto(f"{base}/blogs/{BLOG}/")
    page.get_by_role("navigation", name="Blog").get_by_role("link", name="All posts").click()  # (from the blog page)
    expect(page).to_have_url(f"{base}/blogs/{BLOG}/posts/all/")
    search = page.get_by_role("search", name="Find posts")
    search.get_by_label("Title or text contains").fill("RIVER")
    search.get_by_label("Status").select_option(label="Draft")
    search.get_by_role("button", name="Search").click()

    expect(page).to_have_url(re.compile(r"/posts/all/\?q=RIVER&status=draft$"))
    listed = page.locator("ul.all-posts")
    expect(listed.get_by_role("link", name="Notes from the river")).to_be_visible()
    expect(listed.get_by_role("link", name="Welcome to Field Notes")).to_have_count(0)
    expect(page.locator("#search-summary")).to_contain_text(re.compile(r"^\d+ drafts? match(es)? “RIVER”"))
    expect(page.get_by_label("Title or text contains")).to_have_value("RIVER")  # the form shows the search again
    expect(page.get_by_label("Status")).to_have_value("draft")

    page.get_by_label("Title or text contains").fill("no post is called this")
    page.get_by_label("Title or text contains").press("Enter")
    expect(page.locator("#search-summary")).to_have_text("No drafts match “no post is called this”. Clear the search")
    page.get_by_role("link", name="Clear the search").click()
    expect(page).to_have_url(f"{base}/blogs/{BLOG}/posts/all/")
    expect(page.get_by_label("Title or text contains")).to_have_value("")
    expect(page.locator("ul.all-posts").get_by_role("link", name="Welcome to Field Notes")).to_be_visible()


def test_words_of_a_text_find_its_post_with_the_line_that_holds_them(demo_server, page):
    base = demo_server.url
    login(page, base, "carol")
    page.goto(f"{base}/blogs/{BLOG}/posts/all/")
    page.get_by_label("Title or text contains").fill("HERON")
    page.get_by_label("Title or text contains").press("Enter")
    expect(page).to_have_url(re.compile(r"/posts/all/\?q=HERON&status=$"))  # (the form sends its Status too)
    found = page.locator("ul.all-posts li").filter(has=page.get_by_role("link", name="Notes from the river"))
    # (as the post reads: without the markup of its "*More soon.*")
    expect(found.locator(".post-snippet")).to_have_text("The heron was back this morning. More soon.")
    expect(found.locator(".post-snippet mark")).to_have_text("heron")
