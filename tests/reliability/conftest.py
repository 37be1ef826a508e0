"""Reliability and security tests through the real server.

Each server is `gunicorn config.wsgi -c config/gunicorn.conf.py` (gevent worker) started as a
subprocess by `tests/servers.py` with its own database (a temp SQLite file, or a fresh PostgreSQL
database when DATABASE_URL points at PostgreSQL), migrated and seeded with the demo data plus a
few extra people and a second blog. Servers bind 127.0.0.1 only, die with the test process
(PR_SET_PDEATHSIG) and are stopped at teardown by their own PID. They run the production
settings (DEBUG=0, a collectstatic'd manifest) with recognisable fake secrets.

The model is a loopback OpenAI-compatible stand-in (`ProviderStandIn`, built on the suite's
`ScriptedOpenAIServer`) that can answer statuses, stall, cut, reset or refuse connections.
The tests speak to the server with httpx as a browser would: log in through
/accounts/login/ with the CSRF cookie, then the JSON API of CONTRACT §4.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import struct
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import servers
from tests.agent.backends.openai_server import RecordedRequest, Reply, ScriptedOpenAIServer, _Handler, sse
from tests.reliability.bedrock_standin import MODEL as BEDROCK_MODEL
from tests.reliability.bedrock_standin import BedrockStandIn
from tests.servers import LoopbackStandIn, Server, ServerGroup

PASSWORD = "demo-pass-1234"

# Recognisable fake secrets: any of these found in a log, transcript or page is a leak.
RUN = uuid.uuid4().hex[:10]
FAKE_OPENAI_KEY = f"sk-reliability-FAKEKEY-{RUN}"
FAKE_AWS_KEY_ID = f"AKIARELFAKE{RUN.upper()}"
FAKE_AWS_SECRET = f"reliability/FAKE+aws+secret+{RUN}"
FAKE_SECRET_KEY = f"reliability-secret-key-{RUN}-{uuid.uuid4().hex}"
SECRETS = (FAKE_OPENAI_KEY, FAKE_AWS_KEY_ID, FAKE_AWS_SECRET, FAKE_SECRET_KEY)

NO_LIMITS = {
    "AGENT_BUDGET_TOKENS_PER_MINUTE": "0",
    "AGENT_BUDGET_TOKENS_PER_HOUR": "0",
    "AGENT_BUDGET_USD_PER_MONTH": "0",
    "AGENT_BUDGET_GLOBAL_USD_PER_MONTH": "0",
    "AGENT_MESSAGES_PER_MINUTE": "0",
}

# People and a second blog added to every server's database after seed_demo.
SETUP = r"""
from django.contrib.auth import get_user_model
from blog.access import ALL_SCOPES
from blog.models import Blog, Consent, Post, Seat
U = get_user_model()
PW = "demo-pass-1234"
def user(name):
    return U.objects.filter(username=name).first() or U.objects.create_user(name, "x@example.com", PW)
notes = Blog.objects.get(slug="field-notes")
eve, dave, frank, mallory = user("eve"), user("dave"), user("frank"), user("mallory")
hostile = user('x"><svg onload=alert(1)>')
other, _ = Blog.objects.get_or_create(slug="eve-private", defaults={"title": "Eve's private notes", "owner": eve})
Seat.objects.get_or_create(user=eve, blog=other, defaults={"role": "owner", "may_use_assistant": True})
Consent.objects.get_or_create(user=eve, blog=other, client="", defaults={"scopes": list(ALL_SCOPES)})
Post.objects.get_or_create(blog=other, slug="eve-secret", defaults={"title": "Eve secret", "body": "top secret", "author": eve})
# dave: an author the owner has not allowed to summon the assistant
Seat.objects.get_or_create(user=dave, blog=notes, defaults={"role": "author", "may_use_assistant": False})
# frank: an author who may summon, whose stored Consent claims every scope (more than his seat)
Seat.objects.get_or_create(user=frank, blog=notes, defaults={"role": "author", "may_use_assistant": True})
Consent.objects.get_or_create(user=frank, blog=notes, client="", defaults={"scopes": list(ALL_SCOPES)})
# gina: an editor with a full grant, whose seat the owner will change
gina = user("gina")
Seat.objects.get_or_create(user=gina, blog=notes, defaults={"role": "editor", "may_use_assistant": True})
Consent.objects.get_or_create(user=gina, blog=notes, client="", defaults={"scopes": list(ALL_SCOPES)})
Seat.objects.get_or_create(user=hostile, blog=notes, defaults={"role": "author", "may_use_assistant": True})
print("reliability setup done")
"""


# --- servers ---------------------------------------------------------------------------


def reliability_env(static_root: str) -> dict[str, str]:
    """Production settings (DEBUG=0, whitenoise's manifest) with the fake secrets; no real credential inherited."""
    return servers.server_env(
        without=("OPENAI_BASE_URL", "AWS_SESSION_TOKEN"),  # the rest is set below
        DJANGO_SETTINGS_MODULE="tests.reliability.server_settings",
        RELIABILITY_STATIC_ROOT=static_root,
        DEBUG="0",
        SECRET_KEY=FAKE_SECRET_KEY,
        LOG_LEVEL="INFO",
        OPENAI_API_KEY=FAKE_OPENAI_KEY,
        AWS_ACCESS_KEY_ID=FAKE_AWS_KEY_ID,
        AWS_SECRET_ACCESS_KEY=FAKE_AWS_SECRET,
        AWS_REGION="us-east-1",
    )


@pytest.fixture(scope="session")
def rel_workdir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="reliability-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def static_root(rel_workdir: Path) -> str:
    """collectstatic once, into a temp folder (DEBUG=0 serves hashed files from the manifest)."""
    target = rel_workdir / "static"
    env = {**reliability_env(str(target)), "DATABASE_URL": "sqlite:///" + str(rel_workdir / "unused.sqlite3")}
    servers.manage(env, rel_workdir / "collectstatic.log", "collectstatic", "--noinput")
    return str(target)


@pytest.fixture(scope="session")
def server_factory(request, rel_workdir: Path, static_root: str) -> Iterator[Any]:
    """`server_factory(name, overrides, database=None)` → a new running Server (over `database` if given)."""
    group = ServerGroup(
        "rel",
        rel_workdir,
        reliability_env(static_root),
        seed=(*servers.SEED, ("shell", "-c", SETUP)),
        artifact_prefix="reliability-",
    )
    yield group.start
    group.close(keep_logs=request.session.testsfailed > 0)  # keep the operator's view of a failed run


# --- the model stand-in -----------------------------------------------------------------


@dataclass
class Fault(Reply):
    """A scripted reply that may also reset the connection before writing a single byte."""

    reset: bool = False


class _FaultHandler(_Handler):
    def _answer(self, reply: Reply, stopping: threading.Event, request: RecordedRequest) -> None:
        if getattr(reply, "reset", False):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()  # RST, no status line
            return
        super()._answer(reply, stopping, request)

    def finish(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            super().finish()


class ProviderStandIn(LoopbackStandIn):
    """A loopback OpenAI-compatible server on a fixed port; every reply closes its connection."""

    def _new(self) -> ScriptedOpenAIServer:
        server = ScriptedOpenAIServer(port=self.port)
        server._httpd.RequestHandlerClass = _FaultHandler
        return server.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self):
        return self.server.requests

    def script(self, *replies: Reply) -> None:
        for reply in replies:
            reply.headers = {"Connection": "close", **reply.headers}
        self.server.script(*replies)

    def reset(self) -> None:
        with self.server._lock:
            self.server._replies.clear()
            self.server.requests.clear()

    # --- the fault vocabulary shared with `BedrockStandIn` (tests/reliability/bedrock_standin.py) ---

    name = "openai"
    # What the operator's log says for each fault (any of these).
    LOG = {
        "refused": ("ConnectError",),
        "reset": ("RemoteProtocolError", "ReadError"),
        "timeout": ("Timed out", "no event"),
        "corrupt": ("malformed stream chunk",),
    }

    def finished(self, index: int) -> bool:
        return self.requests[index].finished.is_set()

    def tool_result_sent(self, index: int, call_id: str) -> bool:
        """Whether request `index` carried the `role: "tool"` message answering `call_id`."""
        return any(m["role"] == "tool" and m["tool_call_id"] == call_id for m in self.requests[index].body["messages"])

    def text(self, *texts: str, delay: float = 0.0) -> Fault:
        return text_reply(*texts, delay=delay)

    def tools(self, *calls: tuple[str, str, Any], text: str | None = None) -> Fault:
        return tool_reply(*calls, text=text)

    def throttled(self, retry_after: str, message: str = "slow down") -> Fault:
        return Fault(status=429, headers={"Retry-After": retry_after}, body=error_body(message, "rate_limit"))

    def server_error(self, message: str) -> Fault:
        return Fault(status=500, body=error_body(message))

    def reset_first(self) -> Fault:
        return Fault(reset=True)

    def cut_after(self, *texts: str) -> Fault:
        return Fault(body=[f"data: {json.dumps(chunk({'content': t}))}\n\n" for t in texts], cut=True)

    def stall_first(self, seconds: float) -> Fault:
        return Fault(stall=seconds)

    def stall_after(self, text: str, seconds: float) -> Fault:
        return Fault(body=[f"data: {json.dumps(chunk({'content': text}))}\n\n"], stall=seconds)

    def corrupt_after(self, text: str, garbage: str) -> Fault:
        good = f"data: {json.dumps(chunk({'content': text}))}\n\n"
        return Fault(body=[good, f"data: {{{garbage}\n\n", "data: [DONE]\n\n"])


def error_body(message: str, kind: str = "server_error") -> str:
    return json.dumps({"error": {"message": message, "type": kind, "code": None}})


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-rel",
        "object": "chat.completion.chunk",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


USAGE = {"id": "chatcmpl-rel", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 5}}


def text_reply(*texts: str, delay: float = 0.0, reasoning: str | None = None) -> Fault:
    """A streamed text answer, one chunk per text, each `delay` seconds apart."""
    chunks = ([chunk({"reasoning_content": reasoning})] if reasoning else []) + [chunk({"content": t}) for t in texts]
    return Fault(body=sse(*chunks, chunk({}, "stop"), USAGE), delay=delay)


def tool_reply(*calls: tuple[str, str, Any], text: str | None = None) -> Fault:
    """A response calling tools: (id, name, arguments as a dict or a raw string)."""
    chunks = [chunk({"content": text})] if text else []
    for index, (call_id, name, args) in enumerate(calls):
        raw = args if isinstance(args, str) else json.dumps(args)
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": raw},
                        }
                    ]
                }
            )
        )
    return Fault(body=sse(*chunks, chunk({}, "tool_calls"), USAGE))


# --- the browser-like client -------------------------------------------------------------


@dataclass
class Turn:
    response: httpx.Response
    events: list[tuple[str, Any]]
    raw: str

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.events]

    @property
    def text(self) -> str:
        return "".join(d["text"] for n, d in self.events if n == "token")

    @property
    def terminal(self) -> tuple[str, Any]:
        return [e for e in self.events if e[0] in TERMINALS][-1]


TERMINALS = ("done", "error", "confirm")


def parse_sse_like_a_browser(text: str) -> list[tuple[str, str]]:
    """The WHATWG event-stream parser: lines end at CRLF, LF *or a lone CR*; blank line dispatches."""
    events, name, data = [], "", []
    for line in re.split(r"\r\n|\r|\n", text):
        if line == "":
            if data:
                events.append((name or "message", "\n".join(data)))
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        field_name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field_name == "event":
            name = value
        elif field_name == "data":
            data.append(value)
    return events


def parse_sse(text: str, *, as_json: bool = True) -> list[tuple[str, Any]]:
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].removeprefix(" ")
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if name:
            joined = "\n".join(data)
            events.append((name, json.loads(joined) if as_json and joined and name != "end" else joined))
    return events


class Client:
    """A signed-in browser: its own cookie jar (secure cookies included), CSRF header on writes."""

    def __init__(self, server: Server, username: str | None = None, *, https: bool = False) -> None:
        self.server = server
        self.https = https
        self.jar: dict[str, str] = {}
        self.set_cookies: list[str] = []
        self.http = httpx.Client(base_url=server.url, timeout=httpx.Timeout(30.0), follow_redirects=False)
        if username:
            self.login(username)

    def close(self) -> None:
        self.http.close()

    # plumbing
    def headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        h: dict[str, str] = {}
        if self.jar:
            h["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.jar.items())
        if self.https:
            h["X-Forwarded-Proto"] = "https"
            h["Origin"] = f"https://127.0.0.1:{self.server.port}"
        h.update(extra or {})
        return h

    def keep(self, response: httpx.Response) -> httpx.Response:
        for raw in response.headers.get_list("set-cookie"):
            self.set_cookies.append(raw)
            name, _, rest = raw.partition("=")
            value = rest.split(";", 1)[0]
            if "max-age=0" in raw.lower() or value in ("", '""'):
                self.jar.pop(name.strip(), None)
            else:
                self.jar[name.strip()] = value
        self.http.cookies.clear()
        return response

    @property
    def csrf(self) -> str:
        return self.jar.get("csrftoken", "")

    def get(self, path: str, headers: dict[str, str] | None = None) -> httpx.Response:
        return self.keep(self.http.get(path, headers=self.headers(headers)))

    def post_json(self, path: str, body: Any = None, *, csrf: bool = True, raw: bytes | None = None) -> httpx.Response:
        extra = {"Content-Type": "application/json"}
        if csrf:
            extra["X-CSRFToken"] = self.csrf
        content = raw if raw is not None else json.dumps({} if body is None else body).encode()
        return self.keep(self.http.post(path, content=content, headers=self.headers(extra)))

    def post_form(
        self, path: str, data: dict[str, Any] | None = None, *, csrf: bool = True, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        data = dict(data or {})
        if csrf:
            data["csrfmiddlewaretoken"] = self.csrf
        return self.keep(self.http.post(path, data=data, headers=self.headers(headers)))

    def login(self, username: str, password: str = PASSWORD) -> None:
        assert self.get("/accounts/login/").status_code == 200
        response = self.post_form("/accounts/login/", {"username": username, "password": password})
        assert response.status_code == 302, (username, response.status_code, response.text[:500])
        assert "sessionid" in self.jar

    # the JSON API
    def new_chat(self, blog: str = "field-notes") -> str:
        response = self.post_json("/api/agent/sessions", {"blog": blog})
        assert response.status_code == 201, response.text
        return response.json()["id"]

    def send(self, sid: str, text: str) -> httpx.Response:
        return self.post_json(f"/api/agent/sessions/{sid}/messages", {"text": text})

    def read_stream(self, url: str, *, flavour: str | None = None, deadline: float = 25.0) -> str:
        """The whole stream; fails if it has not ended after `deadline` seconds (heartbeats keep sockets alive)."""
        if flavour:
            url += f"?flavour={flavour}"
        ends = time.monotonic() + deadline
        with self.http.stream("GET", url, headers=self.headers()) as response:
            assert response.status_code == 200, response.read()
            assert response.headers["content-type"].startswith("text/event-stream")
            body = b""
            for piece in response.iter_bytes():
                body += piece
                if time.monotonic() > ends:
                    raise AssertionError(
                        f"the stream did not end within {deadline:g} s; got so far:\n"
                        f"{body.decode(errors='replace')[-2000:]}"
                    )
            return body.decode()

    def turn(self, sid: str, text: str, *, flavour: str | None = None) -> Turn:
        response = self.send(sid, text)
        assert response.status_code == 202, response.text
        raw = self.read_stream(response.json()["stream_url"], flavour=flavour)
        return Turn(response, parse_sse(raw, as_json=flavour != "html"), raw)

    @contextlib.contextmanager
    def open_stream(self, url: str) -> Iterator[Iterator[tuple[str, Any]]]:
        """Follow a stream event by event; leaving the block closes the connection (a browser going away)."""
        with self.http.stream("GET", url, headers=self.headers(), timeout=30.0) as response:
            assert response.status_code == 200

            def events() -> Iterator[tuple[str, Any]]:
                name, data = None, []
                for line in response.iter_lines():
                    if line.startswith("event:"):
                        name = line[6:].strip()
                    elif line.startswith("data:"):
                        data.append(line[5:].removeprefix(" "))
                    elif line == "" and name:
                        yield name, json.loads("\n".join(data)) if data else None
                        name, data = None, []

            yield events()

    def transcript(self, sid: str) -> dict[str, Any]:
        response = self.get(f"/api/agent/sessions/{sid}")
        assert response.status_code == 200, response.text
        return response.json()

    def wait_idle(self, sid: str, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            body = self.transcript(sid)
            if not body["running"] or time.monotonic() > deadline:
                return body
            time.sleep(0.1)


# --- shared checks -------------------------------------------------------------------------

CONTRACT_CODES = {"budget_exceeded", "rate_limited", "tool_cycle_limit", "provider_error", "chat_error"}
LEAKY = (
    "Traceback",
    "Model server",
    "HTTP 4",
    "HTTP 5",
    "httpx",
    "Error:",
    "Exception",
    "BackendError",
    "timed out",
    "Timed out",
    "malformed",
    "Connection",
    "connection",
    "127.0.0.1",
    "openai",
    "OpenAI",
    "Bedrock",
    "bedrock",
    "botocore",
    "psycopg",
    "sqlite",
    *SECRETS,
)


def calm_messages() -> set[str]:
    from agent.loop import CALM, LASTING

    return set(CALM.values()) | set(LASTING.values())


def assert_one_terminal(turn: Turn) -> None:
    terminals = [n for n in turn.names if n in TERMINALS]
    assert len(terminals) == 1, turn.names
    assert turn.names[-1] == terminals[0] or (turn.names[-1] == "end" and turn.names[-2] == terminals[0]), turn.names


def assert_calm_error(turn: Turn, code: str = "provider_error") -> None:
    """The user saw one calm line: one error event with a contract code and a sentence free of detail."""
    assert_one_terminal(turn)
    name, payload = turn.terminal
    assert name == "error", turn.events
    assert payload["code"] == code and code in CONTRACT_CODES
    assert payload["message"] in calm_messages(), payload
    for word in LEAKY:
        assert word not in json.dumps(payload), (word, payload)
    errors = [e for e in turn.events if e[0] == "error"]
    assert len(errors) == 1


def assert_valid_transcript(body: dict[str, Any], *, user_text: str | None = None) -> None:
    """Every tool_use is answered by exactly one later tool_result; nothing answers an unknown call."""
    assert body["running"] is False, "the session is stuck running"
    positions = [m["position"] for m in body["messages"]]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    open_calls: dict[str, int] = {}
    answered: set[str] = set()
    for m in body["messages"]:
        for p in m["parts"]:
            if p["type"] == "tool_use":
                assert m["role"] == "assistant"
                assert p["id"] not in open_calls and p["id"] not in answered, f"duplicate tool id {p['id']}"
                open_calls[p["id"]] = m["position"]
            elif p["type"] == "tool_result":
                assert m["role"] == "tool"
                assert p["tool_use_id"] in open_calls, f"result for unknown call {p['tool_use_id']}"
                assert p["status"] in ("ok", "error")
                answered.add(p["tool_use_id"])
                del open_calls[p["tool_use_id"]]
    assert not open_calls, f"tool_use without tool_result: {open_calls}"
    if user_text is not None:
        users = [m for m in body["messages"] if m["role"] == "user"]
        assert any(p.get("text") == user_text for m in users for p in m["parts"]), f"user message lost: {user_text!r}"


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)


# --- the shared servers ------------------------------------------------------------------

FAULT_SETTINGS = {
    "AGENT_BACKEND": "openai",
    "AGENT_MODEL": "gpt-4o-mini",
    "AGENT_RETRIES": "1",
    "AGENT_FIRST_EVENT_TIMEOUT_SECONDS": "1.5",
    "AGENT_EVENT_TIMEOUT_SECONDS": "1.5",
    "AGENT_TURN_LEASE_SECONDS": "3",
    "AGENT_STOP_POLL_SECONDS": "0.25",
    **NO_LIMITS,
}


@pytest.fixture(scope="session")
def standin() -> Iterator[ProviderStandIn]:
    server = ProviderStandIn()
    yield server
    server.stop()


@pytest.fixture
def provider(standin: ProviderStandIn) -> ProviderStandIn:
    standin.reset()
    return standin


@pytest.fixture(scope="session")
def openai_app(server_factory, standin: ProviderStandIn) -> Server:
    """The production settings (DEBUG=0) with the OpenAI adapter pointed at the stand-in."""
    return server_factory("app", {**FAULT_SETTINGS, "OPENAI_BASE_URL": standin.url})


@pytest.fixture(scope="session")
def app(openai_app: Server) -> Server:
    """The server most tests share (`test_faults.py` runs its provider faults on `bedrock_app` too)."""
    return openai_app


@pytest.fixture(scope="session")
def bedrock_standin() -> Iterator[BedrockStandIn]:
    server = BedrockStandIn()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def bedrock_app(server_factory, bedrock_standin: BedrockStandIn) -> Server:
    """The same server with the Bedrock adapter (boto3) pointed at the Bedrock stand-in, dummy credentials."""
    return server_factory(
        "bedrock",
        {
            **FAULT_SETTINGS,
            "AGENT_BACKEND": "bedrock",
            "AGENT_MODEL": BEDROCK_MODEL,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock_standin.url,
        },
    )


@pytest.fixture
def alice(app: Server) -> Iterator[Client]:
    client = Client(app, "alice")
    yield client
    client.close()


@pytest.fixture
def login(app: Server) -> Iterator[Any]:
    clients: list[Client] = []

    def make(username: str | None, server: Server | None = None, **kw: Any) -> Client:
        client = Client(server or app, username, **kw)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def next_turn_works(provider: ProviderStandIn, alice: Client):
    """After a fault: the same chat answers the next message normally."""

    def check(sid: str) -> None:
        provider.script(provider.text("Back ", "to normal."))
        turn = alice.turn(sid, "Are you there?")
        assert turn.terminal[0] == "done", turn.events
        assert turn.text == "Back to normal."
        assert_valid_transcript(alice.wait_idle(sid), user_text="Are you there?")

    return check


def make_post(client: Client, title: str, body: str = "", blog: str = "field-notes") -> int:
    """Create a draft through the people's form; returns its id (read from the server's database)."""
    response = client.post_form(f"/blogs/{blog}/posts/new/", {"title": title, "body": body})
    assert response.status_code == 302, response.text[:500]
    return client.server.database.scalar(
        "SELECT p.id FROM blog_post p JOIN blog_blog b ON b.id = p.blog_id WHERE b.slug = %s AND p.title = %s "
        "ORDER BY p.id DESC",
        (blog, title),
    )
