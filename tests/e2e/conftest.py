"""Browser tests: real Chromium (Playwright) against real gunicorn + gevent servers.

Each server is a subprocess (`tests/servers.py`) with its own database (a temp SQLite
file, or a fresh PostgreSQL database when DATABASE_URL points at PostgreSQL), migrated
and seeded with the demo data. A server is shared by the tests of one module that ask for the same
settings; only the two demo servers serve every module (see "servers" below).
These tests never touch pytest-django's test database.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.ui import launch_options, login  # noqa: F401  (login: the helper lives with the other page helpers)
from tests.servers import ARTIFACTS, Server, ServerGroup, server_env

HERE = Path(__file__).resolve().parent
SCREENSHOTS = ARTIFACTS / "screenshots"

# Quiet defaults for the shared servers: many tests sign in as the same user within a
# minute, so the per-user limits are off unless a test asks for them.
NO_LIMITS = {
    "AGENT_BUDGET_TOKENS_PER_MINUTE": "0",
    "AGENT_BUDGET_TOKENS_PER_HOUR": "0",
    "AGENT_MESSAGES_PER_MINUTE": "0",
}


# --- marking -------------------------------------------------------------------------


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.e2e)


# --- servers -------------------------------------------------------------------------
# The browser tests start some thirty servers, each holding up to its pool's four connections and its
# lease connection on the database server. Only the two demo servers below serve every module: they are
# package-scoped and stop when the last browser test has run (session-scoped, they held their connections
# through the reliability suite that runs next, whose soak then met PostgreSQL's `max_connections`, "too
# many clients already", on the server the CI shares). Every other server is one module's own:
# `server_factory` is module-scoped, so a module's servers stop, and their databases are dropped, when
# that module ends. Kept to the end of the package, they added up until the run stood at the edge of
# the shared server's 100 connections just before the two-hosts tests. Two modules that ask for the same
# name and env each start their own server.


@pytest.fixture(scope="package")
def e2e_workdir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="e2e-run-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="package")
def e2e_server_env() -> dict[str, str]:
    """The base environment of every browser test server.

    Servers run `config.settings` with DEBUG=1 (no collectstatic needed), seeded with the demo data.
    """
    # Each server's pool at most 4 connections (a browser test's few requests at once need no more): with
    # the default 20, the pools of the run's servers grew under the browser's requests until the last
    # modules' servers met `max_connections` ("too many clients already") on the shared server.
    return server_env(
        DJANGO_SETTINGS_MODULE="config.settings", DEBUG="1", LOG_LEVEL="WARNING", DATABASE_POOL_MAX_SIZE="4"
    )


def reusing(group: ServerGroup) -> Callable[..., Server]:
    """`get(name, **env)` → a running Server of `group`; the same name and env reuse one server."""
    servers: dict[tuple, Server] = {}

    def get(name: str, **overrides: str) -> Server:
        key = (name, tuple(sorted(overrides.items())))
        if key not in servers:
            servers[key] = group.start(name, {k: str(v) for k, v in overrides.items()})
        return servers[key]

    return get


@pytest.fixture(scope="package")
def shared_server_factory(request, e2e_workdir: Path, e2e_server_env: dict[str, str]) -> Iterator[Any]:
    """The servers every module may use (`demo_server`, `slow_demo_server`): kept until the package ends."""
    group = ServerGroup("e2e", e2e_workdir, e2e_server_env)
    yield reusing(group)
    group.close(keep_logs=request.session.testsfailed > 0)


@pytest.fixture(scope="module")
def server_factory(request, e2e_workdir: Path, e2e_server_env: dict[str, str]) -> Iterator[Any]:
    """`server_factory(name, **env)` → a running Server of this module; the same name and env reuse one server.

    Stopped, and its database dropped, when the module ends; its log kept in artifacts/ if a test of the
    module failed.
    """
    failed_before = request.session.testsfailed
    group = ServerGroup("e2e", e2e_workdir, e2e_server_env)
    yield reusing(group)
    group.close(keep_logs=request.session.testsfailed > failed_before)


@pytest.fixture(scope="package")
def write_script(e2e_workdir: Path):
    """Write a fake backend script (CONTRACT §5) and return its path."""

    def write(name: str, calls: list[list[dict[str, Any]]]) -> str:
        path = e2e_workdir / f"script-{name}.json"
        path.write_text(json.dumps({"calls": calls}))
        return str(path)

    return write


@pytest.fixture(scope="package")
def demo_server(shared_server_factory) -> Server:
    """The offline demo model at a brisk pace, no usage limits."""
    return shared_server_factory("demo", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS)


@pytest.fixture(scope="package")
def slow_demo_server(shared_server_factory) -> Server:
    """The demo model slow enough that a person can press Stop mid-reply."""
    return shared_server_factory("demo-slow", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="40", **NO_LIMITS)


# --- the browser ---------------------------------------------------------------------


# Module scope: the sync API leaves an asyncio loop marked running on this thread until
# it stops, which would break later non-browser tests that use asyncio themselves.
@pytest.fixture(scope="module")
def playwright_driver():
    from playwright.sync_api import sync_playwright

    driver = sync_playwright().start()
    yield driver
    driver.stop()


@pytest.fixture(scope="module")
def browser(playwright_driver):
    browser = playwright_driver.chromium.launch(**launch_options())
    yield browser
    browser.close()


@pytest.fixture
def context_options() -> dict[str, Any]:
    """Override in a test (via parametrize or a local fixture) to change the viewport etc."""
    return {"viewport": {"width": 1280, "height": 900}}


@pytest.fixture
def context(browser, context_options):
    context = browser.new_context(**context_options)
    context.set_default_timeout(15_000)
    yield context
    context.close()


@pytest.fixture
def page(context, request):
    from playwright.sync_api import expect

    expect.set_options(timeout=15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors  # type: ignore[attr-defined]
    # The site's Content-Security-Policy allows no inline style or script: whatever a page or a library
    # tries past it is refused, silently but for the console, and is a fault of ours. Not so on an error
    # page these DEBUG=1 servers draw: Django's own (a 404's "Page not found"), styled inline, stands in
    # for the site's, whose templates tests/config/test_content_security_policy.py reads.
    refused: list[str] = []
    error_pages: set[str] = set()

    def on_response(response) -> None:
        if response.request.resource_type == "document" and response.status >= 400:
            error_pages.add(response.url)

    def on_console(message) -> None:
        where = message.location["url"]
        if "Content Security Policy" in message.text and where not in error_pages:
            refused.append(f"{message.text} ({where})")

    page.on("response", on_response)
    page.on("console", on_console)
    yield page
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    try:
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    except Exception as exc:  # a crashed page must not hide the test's own failure
        print(f"screenshot of {name} failed: {exc}", file=sys.stderr)
    if errors:
        pytest.fail(f"uncaught JavaScript errors on the page: {errors}")
    if refused:
        pytest.fail(f"the Content-Security-Policy refused something on the page: {refused}")
