"""The README's screenshots, made again from a fresh demo site: `make screenshots`
(or `.venv/bin/python -m docs.screenshots.make` from the project root).

It starts the site as the browser tests start theirs (`tests.servers.ServerGroup`: a new database, SQLite
unless DATABASE_URL names PostgreSQL, migrated and seeded with the demo data; gunicorn with the project's
configuration and the offline demo model, on a free 127.0.0.1 port), drives headless Chromium
through the flows the pictures show, writes the five PNGs beside this file, and stops the server by
its PID. Every picture is a viewport of a fixed size, taken once the reply has finished streaming,
with animations off, the caret hidden, nothing focused and the pointer out of the way.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Browser, Page, ViewportSize, expect, sync_playwright

from tests.e2e.test_connectors_ui import authorization, register
from tests.e2e.ui import (
    chat_log,
    launch_options,
    login,
    new_chat,
    post_item,
    replies,
    send,
    streaming_reply,
    wait_turn_finished,
)
from tests.servers import ROOT, ServerGroup, server_env

OUT = Path(__file__).resolve().parent
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
TALL_DESKTOP: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}
WAIT = 60_000


@contextmanager
def demo_site(folder: Path) -> Iterator[str]:
    """A fresh demo site on a free loopback port, as the browser tests start theirs; its base URL. Stopped
    by its PID, and its database dropped, on leaving."""
    group = ServerGroup(
        "screenshots", folder, server_env(DJANGO_SETTINGS_MODULE="config.settings", DEBUG="1", LOG_LEVEL="WARNING")
    )
    try:
        yield group.start(
            "demo",
            {
                "AGENT_BACKEND": "demo",
                "AGENT_DEMO_DELAY_MS": "40",  # slow enough that Stop lands mid-reply
                "AGENT_BUDGET_TOKENS_PER_MINUTE": "0",
                "AGENT_BUDGET_TOKENS_PER_HOUR": "0",
                "AGENT_MESSAGES_PER_MINUTE": "0",
            },
        ).url
    finally:
        group.close()


def shoot(page: Page, name: str) -> None:
    """The viewport as docs/screenshots/<name>.png: nothing focused, no pointer hovering, scrolled to the top."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.mouse.move(0, 0)
    page.evaluate("window.scrollTo(0, 0)")
    path = OUT / f"{name}.png"
    page.screenshot(path=str(path), animations="disabled", caret="hide")
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KB")


def ask(page: Page, text: str) -> None:
    send(page, text)
    wait_turn_finished(page, WAIT)


def blog_page(browser: Browser, base: str) -> None:
    """A short chat: a draft, then publishing it once approved."""
    page = browser.new_context(viewport=DESKTOP).new_page()
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "draft a post titled Morning light")
    ask(page, "publish Morning light")
    replies(page).last.locator(".approval").get_by_role("button", name="Approve").click()
    expect(post_item(page, "Morning light").locator(".badge")).to_have_text("Published")
    wait_turn_finished(page, WAIT)
    expect(chat_log(page)).to_contain_text("Done: I published “Morning light”.")
    shoot(page, "blog")
    page.context.close()


def approval(browser: Browser, base: str) -> None:
    """Publishing waits for the person's OK."""
    page = browser.new_context(viewport=DESKTOP).new_page()
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "draft a post titled Evening tide")
    new_chat(page, base)
    ask(page, "publish Evening tide")
    expect(replies(page).last.locator(".approval")).to_contain_text("Needs your OK")
    shoot(page, "approval")
    page.context.close()


def stop(browser: Browser, base: str) -> None:
    """A long reply stopped at its third paragraph keeps what was streamed; the chat goes on."""
    page = browser.new_context(viewport=TALL_DESKTOP).new_page()
    login(page, base, "alice")
    new_chat(page, base)
    send(page, "write something long")
    expect(streaming_reply(page).locator(".flow")).to_contain_text("Paragraph 3:", timeout=WAIT)
    page.locator("#chat-stop").click()
    wait_turn_finished(page, WAIT)
    expect(replies(page).last.locator(".note")).to_have_text("Stopped.")
    ask(page, "list my posts")  # (the chat goes on)
    shoot(page, "stop")
    page.context.close()


def phone(browser: Browser, base: str) -> None:
    """The blog page at a phone's width: the posts, then the assistant below them."""
    context = browser.new_context(viewport=PHONE, device_scale_factor=1, has_touch=True)
    page = context.new_page()
    login(page, base, "alice")
    new_chat(page, base)
    ask(page, "list my posts")
    # The whole page as a person scrolls it on this phone. Not Playwright's full_page: Chromium drops the touch
    # emulation while it captures beyond the viewport, the page is laid out for a mouse (shorter rows) and the
    # picture ends in a blank band. Instead the viewport grows to the page, the panel kept at the height it has
    # on the phone (70vh of 844 px; set through the CSSOM, which the Content-Security-Policy allows).
    panel = page.locator("#assistant")
    panel.evaluate("(el) => { el.style.height = el.getBoundingClientRect().height + 'px'; }")
    page.set_viewport_size({"width": PHONE["width"], "height": page.evaluate("document.documentElement.scrollHeight")})
    shoot(page, "phone")
    context.close()


def consent(browser: Browser, base: str) -> None:
    """The consent page a connecting MCP client sends its person to (registered as a client does, RFC 7591)."""
    url, _verifier = authorization(base, register(base, "Claude"))
    page = browser.new_context(viewport=TALL_DESKTOP).new_page()
    login(page, base, "alice")
    page.goto(url)
    expect(page.locator("#consent-blog")).to_have_text("Field Notes")
    page.locator('#consent-form input[value="posts:delete"]').uncheck()
    shoot(page, "consent")
    page.context.close()


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="screenshots-"))
    try:
        with demo_site(folder) as base, sync_playwright() as playwright:
            browser = playwright.chromium.launch(**launch_options())
            expect.set_options(timeout=15_000)
            for flow in (blog_page, approval, stop, phone, consent):
                flow(browser, base)
            browser.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
