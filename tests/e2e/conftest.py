"""Browser tests: real Chromium (Playwright) against real gunicorn + gevent servers.

Each server is a subprocess with its own database (a temp SQLite file, or a fresh
PostgreSQL database when DATABASE_URL points at PostgreSQL), migrated and seeded with
the demo data. Servers are shared by every test that asks for the same settings.
These tests never touch pytest-django's test database.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.e2e.ui import login  # noqa: F401  (the helper lives with the other page helpers)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent  # the project root: manage.py, config/, ...
ARTIFACTS = ROOT / "artifacts"
SCREENSHOTS = ARTIFACTS / "screenshots"
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
START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
# What the pytest process's own settings put in the environment; a server decides these itself.
_NOT_INHERITED = ("DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE", "TEST_SQLITE_NAME", "BIND", "DATABASE_URL")

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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        for server in _RUNNING:  # cheap: keep every running server's log when anything fails
            server.failed = True
    return report


_RUNNING: list[Server] = []


# --- databases -----------------------------------------------------------------------


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_") and k not in _NOT_INHERITED}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1",
        SECURE_SSL_REDIRECT="0",
        PYTHONUNBUFFERED="1",
        AGENT_TURN_EXECUTOR="auto",
        WEB_CONCURRENCY="1",
        LOG_LEVEL="WARNING",
    )
    return env


def _is_postgres(url: str) -> bool:
    return url.split(":", 1)[0] in ("postgres", "postgresql", "pgsql", "postgis")


def _with_dbname(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))


def _pg_admin(url: str):
    import psycopg

    parts = urlsplit(url)
    return psycopg.connect(
        host=parts.hostname or None,
        port=parts.port or None,
        user=parts.username or None,
        password=parts.password or None,
        dbname="postgres",
        autocommit=True,
    )


@dataclass
class Database:
    url: str
    cleanup: Any = None

    def drop(self) -> None:
        if self.cleanup is not None:
            self.cleanup()
            self.cleanup = None


def create_database(tag: str) -> Database:
    """A fresh, empty database for one server."""
    env_url = os.environ.get("DATABASE_URL", "")
    if _is_postgres(env_url):
        from psycopg import sql

        base = urlsplit(env_url).path.lstrip("/") or "postgres"
        name = f"{base}_e2e_{tag}_{uuid.uuid4().hex[:8]}"
        with _pg_admin(env_url) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

        def drop() -> None:
            with _pg_admin(env_url) as conn:
                try:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
                except Exception:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))

        return Database(_with_dbname(env_url, name), drop)
    folder = tempfile.mkdtemp(prefix=f"e2e-{tag}-")
    return Database(f"sqlite:///{folder}/e2e.sqlite3", lambda: shutil.rmtree(folder, ignore_errors=True))


def prepare_database(env: dict[str, str], log: Path) -> None:
    for command in (["migrate", "--noinput"], ["seed_demo"]):
        result = subprocess.run(
            [sys.executable, "manage.py", *command],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        with log.open("a") as f:
            f.write(f"$ manage.py {' '.join(command)}\n{result.stdout}{result.stderr}\n")
        if result.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")


# --- servers -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    name: str
    url: str
    process: subprocess.Popen
    log: Path
    database: Database
    failed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT)

    def keep_log(self) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        target = ARTIFACTS / f"server-{self.name}.log"
        shutil.copyfile(self.log, target)
        return target


def _wait_until_up(process: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url + "/accounts/login/", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not answer within {START_TIMEOUT:.0f} s:\n{log.read_text()[-4000:]}")


def start_server(name: str, overrides: dict[str, str], workdir: Path) -> Server:
    database = create_database(re.sub(r"[^a-z0-9]", "_", name.lower())[:20])
    log = workdir / f"server-{name}.log"
    env = _base_env()
    env["DATABASE_URL"] = database.url
    env.update(overrides)
    process = None
    try:
        prepare_database(env, log)
        port = free_port()
        env["BIND"] = f"127.0.0.1:{port}"
        url = f"http://127.0.0.1:{port}"
        with log.open("a") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "config.wsgi", "-c", "config/gunicorn.conf.py"],
                cwd=ROOT,
                env=env,
                stdout=stderr,
                stderr=stderr,
                start_new_session=True,
            )
        _wait_until_up(process, url, log)
    except BaseException:
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT)
        if log.exists():
            ARTIFACTS.mkdir(exist_ok=True)
            shutil.copyfile(log, ARTIFACTS / f"server-{name}.log")
        database.drop()
        raise
    return Server(name, url, process, log, database)


@pytest.fixture(scope="session")
def e2e_workdir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="e2e-run-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def server_factory(e2e_workdir: Path) -> Iterator[Any]:
    """`server_factory(name, **env)` → a running Server; the same name and env reuse one server."""
    servers: dict[tuple, Server] = {}

    def get(name: str, **overrides: str) -> Server:
        key = (name, tuple(sorted(overrides.items())))
        if key not in servers:
            servers[key] = start_server(name, {k: str(v) for k, v in overrides.items()}, e2e_workdir)
            _RUNNING.append(servers[key])
        return servers[key]

    yield get
    for server in servers.values():
        try:
            server.stop()
        finally:
            _RUNNING.remove(server)
            if server.failed:
                server.keep_log()
            server.database.drop()


@pytest.fixture(scope="session")
def write_script(e2e_workdir: Path):
    """Write a fake backend script (CONTRACT §5) and return its path."""

    def write(name: str, calls: list[list[dict[str, Any]]]) -> str:
        path = e2e_workdir / f"script-{name}.json"
        path.write_text(json.dumps({"calls": calls}))
        return str(path)

    return write


@pytest.fixture(scope="session")
def demo_server(server_factory) -> Server:
    """The offline demo model at a brisk pace, no usage limits."""
    return server_factory("demo", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="20", **NO_LIMITS)


@pytest.fixture(scope="session")
def slow_demo_server(server_factory) -> Server:
    """The demo model slow enough that a person can press Stop mid-reply."""
    return server_factory("demo-slow", AGENT_BACKEND="demo", AGENT_DEMO_DELAY_MS="40", **NO_LIMITS)


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
    options: dict[str, Any] = {"args": CHROMIUM_ARGS, "headless": True}
    if os.path.exists(CHROMIUM):
        options["executable_path"] = CHROMIUM
    browser = playwright_driver.chromium.launch(**options)
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
    yield page
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    try:
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
    except Exception as exc:  # a crashed page must not hide the test's own failure
        print(f"screenshot of {name} failed: {exc}", file=sys.stderr)
    if errors:
        pytest.fail(f"uncaught JavaScript errors on the page: {errors}")
