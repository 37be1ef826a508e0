"""What a person does on the site, as small helpers over a Playwright page."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import Any

from playwright.sync_api import Browser, Locator, Page, expect

BLOG = "field-notes"
PASSWORD = "demo-pass-1234"  # seed_demo's password for every demo user
LONG_WAIT = 60_000  # a whole "write something long" reply (~700 words at the demo's pace)

# Debian's Chromium where it is installed (Playwright cannot download its own here), headless and quiet:
# no sandbox (containers), no GPU, no QUIC, and none of its own calls home.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def launch_options() -> dict[str, Any]:
    """`chromium.launch(**launch_options())`: the browser the tests and the README's screenshots use."""
    options: dict[str, Any] = {"args": CHROMIUM_ARGS, "headless": True}
    if os.path.exists(CHROMIUM):
        options["executable_path"] = CHROMIUM
    return options


# Records, from the page itself, whether the assistant's text grew while the typing
# indicator was still showing (a MutationObserver sees every swap, however fast).
WATCH_STREAMING = """
() => {
  window.__lengths = [];
  const log = document.getElementById("chat-log");
  new MutationObserver(() => {
    for (const article of log.querySelectorAll("article.msg.assistant.streaming")) {
      const flow = article.querySelector(".flow");
      const typing = article.querySelector(".turn-state .typing");
      const n = flow ? flow.textContent.trim().length : 0;
      if (n && typing && window.__lengths[window.__lengths.length - 1] !== n) window.__lengths.push(n);
    }
  }).observe(log, {subtree: true, childList: true, characterData: true});
}
"""


# Marks <html> once this document's own stream of the blog's changes has opened (htmx's SSE extension
# fires `htmx:sseOpen` on the element that connects). An init script (`context.add_init_script`) runs
# in every document anew, so a page just left cannot mark the next: waiting for a response to the
# events URL could be answered by the stream of the page the browser was leaving.
MARK_BLOG_LIVE = r"""
document.addEventListener("htmx:sseOpen", (e) => {
  if (/\/events\/(\?|$)/.test(e.target.getAttribute("sse-connect") || "")) {  // (?chat=: a chat's page)
    document.documentElement.setAttribute("data-blog-live", "");
  }
});
"""


def expect_blog_live(page: Page) -> None:
    """Wait until the page listens to the blog's changes (needs MARK_BLOG_LIVE added to its context)."""
    expect(page.locator("html[data-blog-live]")).to_have_count(1)


@contextlib.contextmanager
def loads(page: Page, url: str | re.Pattern[str] | None = None) -> Iterator[None]:
    """`with loads(page): <a click, submit or Enter that opens a page>`: the block returns once that page
    has loaded.

    A click waits at most for the navigation it starts, not for the page it opens, whose scripts (htmx,
    static/js/*) are deferred: they have run by its `load` event, and until then an htmx button, the chat's
    Enter or editor.js does nothing. This waits for the next navigation (to `url`, when given) and its
    `load` (Playwright's `expect_navigation`, listening from before the block). `wait_for_url` after the
    click returns at once when the page being left already matches, as it does when htmx opens the next
    page only once its request is answered (New chat, from a chat's page)."""
    with page.expect_navigation(url=url, wait_until="load"):
        yield


def login(page: Page, base: str, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{base}/accounts/login/")
    fill_sign_in(page, username, password)
    expect(page.locator(".topbar .who")).to_have_text(username)


@contextlib.contextmanager
def signed_in(browser: Browser, base: str, username: str) -> Iterator[Page]:
    """Another person at the same time: a page of a browser context of its own (its own cookies), signed in
    as `username`; the context closed when the block ends."""
    context = browser.new_context()
    try:
        context.set_default_timeout(15_000)
        page = context.new_page()
        login(page, base, username)
        yield page
    finally:
        context.close()


def fill_sign_in(page: Page, username: str, password: str = PASSWORD) -> None:
    """Sign in on the sign-in form the page shows (reached by a redirect, say)."""
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.locator("main").get_by_role("button", name="Sign in").click()


def sign_out_elsewhere(page: Page, base: str) -> None:
    """Sign the person of `page` out in another tab of its browser, then close that tab."""
    other = page.context.new_page()
    other.goto(f"{base}/blogs/{BLOG}/")
    other.get_by_role("button", name="Sign out").click()
    other.wait_for_url(re.compile(r"/accounts/login/$"))  # signed out, its page settled (not closed mid-navigation)
    other.close()


def open_blog(page: Page, base: str) -> None:
    page.goto(f"{base}/blogs/{BLOG}/")


def chat_input(page: Page) -> Locator:
    return page.locator("#chat-form textarea[name=text]")


def send_button(page: Page) -> Locator:
    return page.locator("#chat-form #chat-send")


def expect_writable_not_sendable(page: Page) -> None:
    """A turn runs: the box takes the next message's words, and nothing can be sent until the turn ends."""
    expect(send_button(page)).to_be_disabled()  # (aria-disabled: still in the tab order, heard as unavailable)
    expect(chat_input(page)).to_be_editable()
    expect(page.locator("#chat-files")).to_be_enabled()


def chat_log(page: Page) -> Locator:
    return page.locator("#chat-log")


def user_messages(page: Page) -> Locator:
    return page.locator("#chat-log article.msg.user")


def replies(page: Page) -> Locator:
    return page.locator("#chat-log article.msg.assistant")


def streaming_reply(page: Page) -> Locator:
    return page.locator("#chat-log article.msg.assistant.streaming")


def post_item(page: Page, title: str) -> Locator:
    return page.locator("#post-list li.post").filter(
        has=page.locator("a.post-title", has_text=re.compile("^" + re.escape(title) + "$"))
    )


def chip(page: Page, tool: str) -> Locator:
    return page.locator("#chat-log .chip").filter(has=page.locator(".chip-name", has_text=tool))


def new_chat(page: Page, base: str) -> None:
    """Open the blog and start a fresh chat with the panel's "New chat" button."""
    open_blog(page, base)
    page.locator("#assistant").get_by_role("button", name="New chat").click()
    page.wait_for_url(re.compile(r"[?&]chat="))
    expect(chat_input(page)).to_be_enabled()
    expect(page.locator("#chat-log article.msg")).to_have_count(0)


def send(page: Page, text: str) -> None:
    """Type a message and press Enter (on a touch screen, where Enter adds a line, tap Send); returns once
    the user's bubble is in the log."""
    before = user_messages(page).count()
    box = chat_input(page)
    box.fill(text)
    if page.evaluate("matchMedia('(pointer: coarse)').matches"):
        page.locator("#chat-send").tap()
    else:
        box.press("Enter")
    expect(user_messages(page)).to_have_count(before + 1)


def wait_turn_finished(page: Page, timeout: float = 15_000) -> None:
    expect(streaming_reply(page)).to_have_count(0, timeout=timeout)
    expect(send_button(page)).to_be_enabled(timeout=timeout)  # (the box is open while it runs too)
    wait_settled(page, timeout)


def wait_settled(page: Page, timeout: float = 15_000) -> None:
    """htmx has taken in what it last swapped. Until it settles a new form's hx-post is not wired,
    and pressing its button submits the form natively. The site settles at once (defaultSettleDelay
    0, templates/base.html); this holds a test to it whatever the setting."""
    expect(page.locator(".htmx-added, .htmx-settling")).to_have_count(0, timeout=timeout)


def ask(page: Page, text: str, timeout: float = 15_000) -> Locator:
    """Send a message, wait for the whole reply and return its article."""
    send(page, text)
    wait_turn_finished(page, timeout)
    return replies(page).last


# Records what a screen reader following ARIA would announce: every node added inside a live
# region (aria-live other than "off", or role log, status or alert), unless it lies in a part that
# says it is still being updated (aria-busy="true") or is hidden from assistive technology. Each
# addition is recorded as its text, spaces kept (an element's aria-label stands for its content when
# it has no text), once for every live region around it: a region inside another (an alert in the
# chat's log) is heard from both, up to the nearest aria-live="off". An alert is also heard when it
# arrives inside a larger addition (browsers announce an alert as it appears).
WATCH_ANNOUNCEMENTS = """
() => {
  window.__announced = [];
  const LIVE = "[aria-live], [role=log], [role=status], [role=alert]";
  function regions(node) {
    const found = [];
    const start = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement;
    for (let live = start && start.closest(LIVE); live; live = live.parentElement && live.parentElement.closest(LIVE)) {
      if (live.getAttribute("aria-live") === "off") break;
      found.push(live);
    }
    return found;
  }
  function muted(node, live) {
    for (let el = node.nodeType === Node.ELEMENT_NODE ? node : node.parentElement; el; el = el.parentElement) {
      if (el.hidden || el.getAttribute("aria-hidden") === "true" || el.getAttribute("aria-busy") === "true") return true;
      if (el === live) return false;
    }
    return false;
  }
  function spoken(node) {
    if (node.nodeType === Node.TEXT_NODE) return node.data;
    if (node.nodeType !== Node.ELEMENT_NODE) return "";
    if (node.hidden || node.getAttribute("aria-hidden") === "true" || node.getAttribute("aria-busy") === "true") return "";
    if (node.getAttribute("aria-label") && !node.textContent.trim()) return node.getAttribute("aria-label");
    return Array.from(node.childNodes).map(spoken).join("");
  }
  function hear(node) {
    const text = spoken(node);
    if (text.trim()) window.__announced.push(text);
  }
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (!document.contains(node)) continue;
        for (const live of regions(node)) if (!muted(node, live)) hear(node);
        if (node.nodeType !== Node.ELEMENT_NODE) continue;
        for (const alert of node.querySelectorAll("[role=alert]")) if (!muted(alert, null)) hear(alert);
      }
    }
  }).observe(document.body, {subtree: true, childList: true});
}
"""


def announcements(page: Page) -> list[str]:
    """What WATCH_ANNOUNCEMENTS recorded since it started."""
    return page.evaluate("window.__announced")
