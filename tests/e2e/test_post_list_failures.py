"""Publish and Unpublish on the blog page's list are requests of the page (htmx): one that failed (the
site unreachable, an error on the server, the post gone) used to change nothing and say nothing. The
page says so above the list, and the next click clears it. (A 403, the page's security token outdated
by a sign-in in another tab, takes the same path; under DEBUG, as here, django-htmx shows its error page
for 400, 403, 404 and 500 instead, so those are not the statuses used.)"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.ui import login, open_blog, post_item

UNPUBLISH = "**/posts/*/unpublish/*"


def test_a_publish_or_unpublish_that_failed_says_so_above_the_list(demo_server, page):
    base = demo_server.url
    login(page, base, "alice")
    open_blog(page, base)
    row = post_item(page, "Welcome to Field Notes")
    notice = page.locator("#post-list-error")

    page.route(UNPUBLISH, lambda route: route.abort())
    row.get_by_role("button", name="Unpublish").click()
    expect(notice).to_have_text("The site couldn't be reached. Check your connection and try again.")
    expect(notice).to_have_attribute("role", "alert")
    expect(row.locator(".badge")).to_have_text("Published")

    page.unroute(UNPUBLISH)
    page.route(UNPUBLISH, lambda route: route.fulfill(status=502, body=""))
    row.get_by_role("button", name="Unpublish").click()
    expect(notice).to_have_text("Something went wrong on our side. Please try again in a moment.")

    page.unroute(UNPUBLISH)
    page.route(UNPUBLISH, lambda route: route.fulfill(status=410, body=""))
    row.get_by_role("button", name="Unpublish").click()
    expect(notice).to_have_text("That isn't available to you any more. Reload the page to see where things stand.")
    expect(page.locator(".notice[role=alert]")).to_have_count(1)  # one notice, said anew, never piled up

    page.unroute(UNPUBLISH)
    row.get_by_role("button", name="Unpublish").click()  # through this time: the notice goes
    expect(row.locator(".badge")).to_have_text("Draft")
    expect(notice).to_have_count(0)
    row.get_by_role("button", name="Publish").click()  # (the demo server is shared: as it was)
    expect(row.locator(".badge")).to_have_text("Published")
