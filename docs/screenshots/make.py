"""The README's screenshots, made again from a fresh demo site: `make screenshots`
(or `.venv/bin/python -m docs.screenshots.make` from the project root).

It migrates a new SQLite database in a temp folder, seeds the demo data (`seed_demo`), starts the site
(`python -m config.serve`, the offline demo model) on a free 127.0.0.1 port, drives headless Chromium
through the flows the pictures show, writes the five PNGs beside this file, and stops the server by
its PID. Every picture is a viewport of a fixed size, taken once the reply has finished streaming,
with animations off, the caret hidden, nothing focused and the pointer out of the way.
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

import httpx
from playwright.sync_api import Browser, Page, ViewportSize, expect, sync_playwright

from tests.e2e.connect import CALLBACK
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
from tests.servers import ROOT, free_port, manage, server_env

OUT = Path(__file__).resolve().parent
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
TALL_DESKTOP: ViewportSize = {"width": 1280, "height": 900}
PHONE: ViewportSize = {"width": 390, "height": 844}
SCOPES = ["posts:read", "posts:write", "posts:publish", "posts:delete"]
WAIT = 60_000


@contextmanager
def demo_site(folder: Path) -> Iterator[str]:
    """A fresh demo site on a free loopback port; its base URL. Stopped by its PID on leaving."""
    env = server_env(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1",
        LOG_LEVEL="WARNING",
        DATABASE_URL=f"sqlite:///{folder}/db.sqlite3",
        MEDIA_ROOT=str(folder / "media"),
        AGENT_BACKEND="demo",
        AGENT_DEMO_DELAY_MS="40",  # slow enough that Stop lands mid-reply
        AGENT_BUDGET_TOKENS_PER_MINUTE="0",
        AGENT_BUDGET_TOKENS_PER_HOUR="0",
        AGENT_MESSAGES_PER_MINUTE="0",
    )
    log = folder / "server.log"
    manage(env, log, "migrate", "--noinput")
    manage(env, log, "seed_demo")
    port = free_port()
    env["BIND"] = f"127.0.0.1:{port}"
    base = f"http://127.0.0.1:{port}"
    with log.open("a") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "config.serve"], cwd=ROOT, env=env, stdout=out, stderr=out, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the site did not start:\n{log.read_text()[-4000:]}")
            try:
                if httpx.get(f"{base}/accounts/login/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        yield base
    finally:
        if server.poll() is None:
            os.kill(server.pid, signal.SIGINT)  # gunicorn's quick shutdown
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)  # the process group it started (start_new_session)
                server.wait(timeout=10)


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
    registered = httpx.post(f"{base}/oauth/register/", json={"client_name": "Claude", "redirect_uris": [CALLBACK]})
    registered.raise_for_status()
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    query = {
        "response_type": "code",
        "client_id": registered.json()["client_id"],
        "redirect_uri": CALLBACK,
        "state": "s1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": f"{base}/mcp",
        "scope": " ".join(SCOPES),
    }
    page = browser.new_context(viewport=TALL_DESKTOP).new_page()
    login(page, base, "alice")
    page.goto(f"{base}/oauth/authorize/?{urlencode(query)}")
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
