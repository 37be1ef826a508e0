"""Times in the browser's own zone: Chromium told it is in Tokyo (Playwright's `timezone_id`) gets
every time in Tokyo's, with the `datetime` attribute's offset saying so; a first page, rendered before the
browser could name its zone, writes its times again in it; without scripts, times are UTC, saying so."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import expect

from tests.e2e.ui import BLOG, login, new_chat, open_blog, post_item

TOKYO = {"viewport": {"width": 1280, "height": 900}, "timezone_id": "Asia/Tokyo"}
KIRITIMATI = {"viewport": {"width": 1280, "height": 900}, "timezone_id": "Pacific/Kiritimati"}  # UTC+14


def shown(iso: str, with_time: bool = True) -> str:
    """What the site shows for the time `iso`: "Dec 4, 2026 05:30" (or the date alone)."""
    when = datetime.fromisoformat(iso)
    return f"{when:%b} {when.day}, {when:%Y %H:%M}" if with_time else f"{when:%b} {when.day}, {when:%Y}"


def a_post_and_two_chats(page, base: str, title: str) -> str:
    """Alice's new draft `title` and two chats (the panel lists the earlier ones, each with its time):
    the address of the draft's history."""
    login(page, base, "alice")
    page.goto(f"{base}/blogs/{BLOG}/posts/new/")
    page.get_by_label("Title").fill(title)
    page.get_by_role("button", name="Create draft").click()
    post_item(page, title).get_by_role("link", name="History").click()
    history = page.url
    new_chat(page, base)
    new_chat(page, base)
    return history


@pytest.mark.parametrize("context_options", [TOKYO], ids=["Asia/Tokyo"])
def test_post_history_and_chats_are_in_the_browsers_zone(demo_server, page, context_options):
    base = demo_server.url
    history = a_post_and_two_chats(page, base, "Tokyo time check")
    page.goto(history)
    stamp = page.locator(".revision time").first
    iso = stamp.get_attribute("datetime") or ""
    assert iso.endswith("+09:00")
    expect(stamp).to_have_text(shown(iso))

    open_blog(page, base)
    stamp = page.locator("#assistant .history time").first
    iso = stamp.get_attribute("datetime") or ""
    assert iso.endswith("+09:00")
    when = datetime.fromisoformat(iso)
    expect(stamp).to_have_text(f"{when:%b} {when.day}, {when:%H:%M}", use_inner_text=False)


@pytest.mark.parametrize("context_options", [KIRITIMATI], ids=["Pacific/Kiritimati"])
def test_a_readers_very_first_page_shows_dates_in_their_own_zone(demo_server, page, context_options):
    """The first page is rendered before the browser could name its zone (in UTC, saying so); it writes its
    dates again in the browser's zone as it loads, and every page after it comes in that zone."""
    base = demo_server.url
    page.goto(f"{base}/read/{BLOG}/")
    stamp = page.locator(".public-entry time").first
    iso = stamp.get_attribute("datetime") or ""
    assert iso.endswith("+00:00")  # (rendered in UTC)
    here = datetime.fromisoformat(iso).astimezone(ZoneInfo("Pacific/Kiritimati"))
    expect(stamp).to_have_text(shown(here.isoformat(), with_time=False))

    page.reload()
    stamp = page.locator(".public-entry time").first
    iso = stamp.get_attribute("datetime") or ""
    assert iso.endswith("+14:00")
    expect(stamp).to_have_text(shown(iso, with_time=False))


NO_SCRIPTS = {**KIRITIMATI, "java_script_enabled": False}


@pytest.mark.parametrize("context_options", [NO_SCRIPTS], ids=["no-scripts"])
def test_without_scripts_a_reader_sees_dates_in_utc_saying_so(demo_server, page, context_options):
    base = demo_server.url
    for _ in range(2):  # (the browser never names its zone)
        page.goto(f"{base}/read/{BLOG}/")
        stamp = page.locator(".public-entry time").first
        iso = stamp.get_attribute("datetime") or ""
        assert iso.endswith("+00:00")
        expect(stamp).to_have_text(shown(iso, with_time=False) + " UTC")


@pytest.mark.parametrize("context_options", [TOKYO], ids=["Asia/Tokyo"])
def test_the_first_page_after_moving_shows_times_in_the_new_zone(demo_server, page, context, context_options):
    """The browser's cookie still names the zone it was in (New York): the server renders the page in it,
    and the page writes its times again in the browser's zone now (Tokyo), in the server's form, with no
    reload; every page after it comes from the server in Tokyo's zone."""
    base = demo_server.url
    history = a_post_and_two_chats(page, base, "Moving time check")

    context.add_cookies([{"name": "tz", "value": "America/New_York", "url": base}])
    page.goto(history)
    stamp = page.locator(".revision time").first
    iso = stamp.get_attribute("datetime") or ""
    assert iso.endswith(("-05:00", "-04:00"))  # (rendered in New York's zone)
    tokyo = datetime.fromisoformat(iso).astimezone(ZoneInfo("Asia/Tokyo"))
    expect(stamp).to_have_text(shown(tokyo.isoformat()))
    assert [c["value"] for c in context.cookies() if c["name"] == "tz"] == ["Asia/Tokyo"]

    context.add_cookies([{"name": "tz", "value": "America/New_York", "url": base}])
    open_blog(page, base)  # the panel's earlier chats: a date and a time without the year
    stamp = page.locator("#assistant .history time").first
    tokyo = datetime.fromisoformat(stamp.get_attribute("datetime") or "").astimezone(ZoneInfo("Asia/Tokyo"))
    expect(stamp).to_have_text(f"{tokyo:%b} {tokyo.day}, {tokyo:%H:%M}", use_inner_text=False)

    page.reload()
    stamp = page.locator("#assistant .history time").first
    assert (stamp.get_attribute("datetime") or "").endswith("+09:00")
    expect(stamp).to_have_text(f"{tokyo:%b} {tokyo.day}, {tokyo:%H:%M}", use_inner_text=False)
