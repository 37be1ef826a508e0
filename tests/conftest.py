"""Shared fixtures: users, a scripted fake backend, the API client and a stream reader.

The engine's tests (tests/agent) run under settings of their own, a project with nothing of `blog`,
`config` or `accounts` (`--ds=tests.agent.settings`); everything else runs under tests.settings. Each run collects only
its own side, so `make test`'s two runs together run every test once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client

from agent.backends import reset_backends
from agent.models import Session
from tests.redis_server import RedisServer
from tests.servers import SERVER_WARNINGS

ENGINE_TESTS = Path(__file__).resolve().parent / "agent"
ENGINE_SETTINGS = "tests.agent.settings"


def _engine_side(path: Path) -> bool | None:
    """True inside tests/agent, False elsewhere in tests/, None for tests/ itself and above (both sides)."""
    if path == ENGINE_TESTS or ENGINE_TESTS in path.parents:
        return True
    return None if path in ENGINE_TESTS.parents else False


def _engine_only() -> bool:
    return settings.SETTINGS_MODULE == ENGINE_SETTINGS


def pytest_configure(config: pytest.Config) -> None:
    """A path named on the command line that these settings would not collect is a mistake: say so.

    Every Python process a test starts inherits the suite's rule that deprecations fail (pyproject.toml's
    `filterwarnings` holds in this one): `server_env` sets it for servers, and the environment carries
    it to a test's own `subprocess.run([sys.executable, ...])`, whatever the shell had set (as the
    pyproject's filters override `-W` here).
    """
    os.environ["PYTHONWARNINGS"] = SERVER_WARNINGS
    for arg in config.args:
        side = _engine_side(Path(arg.split("::")[0]).resolve())
        if side is True and not _engine_only():
            raise pytest.UsageError(f"tests/agent runs with blog not installed: add --ds={ENGINE_SETTINGS}")
        if side is False and _engine_only():
            raise pytest.UsageError(f"Only tests/agent runs under {ENGINE_SETTINGS}; {arg} needs tests.settings")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave no `-wal`/`-shm` file of the SQLite test database behind.

    SQLite deletes a database's WAL and shared-memory files when its last connection closes. A
    connection still open in another thread when the run ends (a turn's or a server thread's, which
    the main thread cannot close) keeps them after Django has removed the database file itself.
    Once that file is gone, they belong to nothing: remove them.
    """
    database = settings.DATABASES.get("default", {}) if settings.configured else {}
    name = (database.get("TEST") or {}).get("NAME")
    if database.get("ENGINE") != "django.db.backends.sqlite3" or not name or Path(name).exists():
        return  # (the file is still there when a run keeps it, e.g. --reuse-db: so are its companions)
    for suffix in ("-wal", "-shm"):
        Path(f"{name}{suffix}").unlink(missing_ok=True)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    side = _engine_side(collection_path)
    return True if side is not None and side != _engine_only() else None


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Django's cache (per process here) starts empty for each test: counts and renders never carry over."""
    cache.clear()


@pytest.fixture(autouse=True)
def _fresh_backends():
    reset_backends()
    yield
    reset_backends()


@pytest.fixture
def fresh_runners(monkeypatch):
    """No runner of another test waits here (`agent.runners`); the ones this test leaves idle end,
    closing their connections, before the next test."""
    from agent import runners

    monkeypatch.setattr(runners, "_idle", [])
    yield
    left = list(runners._idle)
    for runner in left:
        runner.job = None
        runner.given.set()
    for runner in left:
        assert runner.ended.wait(5)


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("uma", password="pw-uma-12345")


@pytest.fixture
def other_user(django_user_model):
    return django_user_model.objects.create_user("otto", password="pw-otto-12345")


@pytest.fixture
def auditor(django_user_model) -> Client:
    """A superuser's browser, signed in to the admin (reading transcripts)."""
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("audit", password="audit-pass-123"))
    return client


@pytest.fixture
def api(user) -> ApiClient:
    return ApiClient(user)


@pytest.fixture
def script(tmp_path, settings):
    """Set the fake backend's script: `script([[events of call 0], [events of call 1], ...])`."""

    def write(calls: list[list[dict[str, Any]]]) -> None:
        path = tmp_path / "script.json"
        path.write_text(json.dumps({"calls": calls}))
        settings.AGENT_BACKEND = "fake"
        settings.AGENT_FAKE_SCRIPT = str(path)
        reset_backends()

    return write


@pytest.fixture
def chat(user) -> Session:
    return Session.objects.create(user=user, purpose="chat", system_prompt="You are helpful.")


def streamed_turn(stream_url: str) -> tuple[Any, Any]:
    """The chat and turn a `stream_url` follows: two URLs handed out by different requests may differ
    in their pass (`agent.stream_pass`, signed with the second it was made) and still be one stream."""
    from django.urls import resolve

    match = resolve(stream_url)
    return match.kwargs["session_id"], match.kwargs["turn_id"]


def parse_sse(body: bytes) -> list[tuple[str, Any]]:
    """Events of an SSE body as (name, decoded JSON data); comments ignored."""
    events = []
    for block in body.decode().split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data.append(line[6:])
        if name:
            events.append((name, json.loads("\n".join(data)) if data else None))
    return events


class ApiClient:
    """Django's test client speaking the JSON API as a signed-in user, with CSRF checks on."""

    def __init__(self, user: Any) -> None:
        self.client = Client(enforce_csrf_checks=True)
        self.client.force_login(user)
        self.client.get("/accounts/login/")  # sets the CSRF cookie
        self.csrf = self.client.cookies["csrftoken"].value

    def post(self, url: str, body: Any = None, raw: bytes | None = None):
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        return self.client.post(url, data=data, content_type="application/json", HTTP_X_CSRFTOKEN=self.csrf)

    def get(self, url: str, **headers: Any):
        return self.client.get(url, **headers)

    def send(self, session: Session, text: str):
        return self.post(f"/api/agent/sessions/{session.pk}/messages", {"text": text})

    def events(self, url: str, **headers: Any) -> list[tuple[str, Any]]:
        response = self.client.get(url, **headers)
        assert response.status_code == 200, response.content
        assert response["Content-Type"] == "text/event-stream"
        assert response["Cache-Control"] == "no-store, private"  # (one person's: no cache keeps it)
        return parse_sse(b"".join(response.streaming_content))

    def turn(self, session: Session, text: str) -> list[tuple[str, Any]]:
        response = self.send(session, text)
        assert response.status_code == 202, response.content
        return self.events(response.json()["stream_url"])

    def transcript(self, session: Session) -> dict[str, Any]:
        response = self.get(f"/api/agent/sessions/{session.pk}")
        assert response.status_code == 200
        return response.json()


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """A redis-server of the tests' own, on a free loopback port, for the module's tests."""
    server = RedisServer().start()
    yield server
    server.stop()
