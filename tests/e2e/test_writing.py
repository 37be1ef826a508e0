"""Reading and writing in a real browser: a visitor reads the blog and finds its feed; the editor's
live preview renders markdown as the public page will (inert when hostile), and leaving the editor
with unsaved work asks first."""

from __future__ import annotations

from xml.etree import ElementTree

from playwright.sync_api import expect

from tests.e2e.ui import BLOG, login

ATOM = "{http://www.w3.org/2005/Atom}"


def test_a_visitor_reads_the_index_and_a_post_and_finds_the_feed(demo_server, page):
    base = demo_server.url
    page.goto(f"{base}/")
    expect(page.locator("main").get_by_role("link", name="sign in")).to_be_visible()
    page.get_by_role("link", name="Field Notes").click()
    expect(page).to_have_url(f"{base}/read/{BLOG}/")
    entry = page.locator(".public-entry", has_text="Welcome to Field Notes")
    expect(entry.locator(".excerpt")).to_contain_text("Short notes from long walks.")
    expect(entry.locator(".meta")).to_contain_text("alice")
    feed_href = page.locator('link[rel="alternate"][type="application/atom+xml"]').get_attribute("href")
    assert feed_href == f"/read/{BLOG}/feed/"

    entry.get_by_role("link", name="Welcome to Field Notes").click()
    expect(page.locator("article > h1")).to_have_text("Welcome to Field Notes")
    assert page.title() == "Welcome to Field Notes · Field Notes · Field Desk"
    expect(page.locator('meta[property="og:title"]')).to_have_attribute("content", "Welcome to Field Notes")

    feed = page.request.get(f"{base}{feed_href}")
    assert feed.ok and feed.headers["content-type"].startswith("application/atom+xml")
    titles = [e.findtext(f"{ATOM}title") for e in ElementTree.fromstring(feed.body()).iter(f"{ATOM}entry")]
    assert "Welcome to Field Notes" in titles and "Notes from the river" not in titles  # no drafts


def test_the_editor_previews_as_the_page_will_and_keeps_unsaved_work(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    expect(page.locator("#post-state")).to_contain_text("Creating saves a private draft")
    page.get_by_label("Title").fill("Preview check")
    body = page.get_by_label("Body (markdown)")
    body.fill("Some **bold** words.\n\n<script>window.__xss = 1</script>\n\n[bad](javascript:alert(1))")
    preview = page.locator("#preview")
    expect(preview.locator("strong")).to_have_text("bold")
    expect(preview).to_contain_text("<script>window.__xss = 1</script>")  # shown as text, not run
    expect(preview.locator("script")).to_have_count(0)
    expect(preview.locator('a[href^="javascript"]')).to_have_count(0)
    assert page.evaluate("typeof window.__xss") == "undefined"

    # Leaving with unsaved work asks first; staying keeps every word.
    asked: list[str] = []

    def stay(dialog):
        asked.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", stay)
    page.get_by_role("link", name="Cancel").click()
    expect(body).to_have_value(
        "Some **bold** words.\n\n<script>window.__xss = 1</script>\n\n[bad](javascript:alert(1))"
    )
    assert asked == ["beforeunload"]
    assert page.url == f"{base}/blogs/{BLOG}/posts/new/"

    # Saving is not leaving by mistake: no question, and the draft exists.
    page.remove_listener("dialog", stay)
    page.get_by_role("button", name="Create draft").click()
    expect(page).to_have_url(f"{base}/blogs/{BLOG}/")
    expect(page.locator("#post-list")).to_contain_text("Preview check")
    assert asked == ["beforeunload"]
