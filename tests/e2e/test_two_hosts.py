"""Two hosts on one database and one Redis (issue 19): a turn's live tokens, Stop and a blog's changes
reach every worker and host, and losing Redis loses nothing.

Each "host" is a gunicorn server with two gevent workers (`tests/servers.py`); both share one
PostgreSQL database of this module's own (`h3_<hex>` on 127.0.0.1:5432, created and dropped here;
a shared SQLite file when no PostgreSQL answers) and one `redis-server` of this module's own on a
free port (`tests/redis_server.py`), never the shared one on 6379. The model is the `fake` backend:
every turn's first answer is `TOKENS` words, each its own event, `DELAY_MS` apart.

Nothing here asserts on time: each test asserts on what it saw (events and their ids, the
transcript, requests the page made). Stop is proven to travel on the bus because the servers look at
the database's Stop flag only once a minute (`AGENT_STOP_POLL_SECONDS=60`), while the turn lasts
seconds.
"""

from __future__ import annotations

import contextlib
import json
import socket
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from tests import servers
from tests.e2e.ui import login
from tests.redis_server import RedisServer
from tests.reliability.conftest import Client
from tests.servers import Database, Server, ServerGroup

TOKENS = 100
DELAY_MS = 50
WORDS = [f"w{i} " for i in range(TOKENS)]
SHORT = ["one ", "two ", "three ", "four ", "five"]
PG_SERVER = "postgres://postgres@127.0.0.1:5432"
TERMINALS = ("done", "error", "confirm")


def script() -> dict[str, Any]:
    """Call 0 of every chat: the long answer; later calls: five words, a little apart."""
    done = {"kind": "done", "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 5}}
    long = [{"kind": "text", "text": w, "delay_ms": DELAY_MS} for w in WORDS]
    short = [{"kind": "text", "text": w, "delay_ms": 40} for w in SHORT]
    return {"calls": [[*long, done]] + [[*short, done] for _ in range(40)]}


def shared_database() -> Database:
    """A database of this module's own: PostgreSQL `h3_<hex>` when it answers, else a SQLite file."""
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=2):
            pass
    except OSError:
        folder = tempfile.mkdtemp(prefix="h3-")
        return Database(f"sqlite:///{folder}/db.sqlite3", folder=folder)
    from psycopg import sql

    name = f"h3_{uuid.uuid4().hex[:10]}"
    with servers.pg_connect(PG_SERVER, "postgres") as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return Database(f"{PG_SERVER}/{name}", pg_name=name)


@dataclass
class Hosts:
    a: Server
    b: Server
    redis: RedisServer
    database: Database


@pytest.fixture(scope="module")
def hosts(request) -> Iterator[Hosts]:
    workdir = Path(tempfile.mkdtemp(prefix="h3-hosts-"))
    (workdir / "script.json").write_text(json.dumps(script()))
    redis = RedisServer(workdir / "redis.log").start()
    database = shared_database()
    env = servers.server_env(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1",
        LOG_LEVEL="INFO",
        WEB_CONCURRENCY="2",
        DATABASE_POOL_MAX_SIZE="4",  # four workers on a PostgreSQL that others share
        AGENT_BACKEND="fake",
        AGENT_FAKE_SCRIPT=str(workdir / "script.json"),
        AGENT_EVENTS_URL=redis.url,
        AGENT_STOP_POLL_SECONDS="60",
        AGENT_CONFIRM_TOOLS="",
        AGENT_BUDGET_TOKENS_PER_MINUTE="0",
        AGENT_BUDGET_TOKENS_PER_HOUR="0",
        AGENT_MESSAGES_PER_MINUTE="0",
    )
    group = ServerGroup("h3", workdir, env, artifact_prefix="two-hosts-")
    try:
        for command in servers.SEED:
            servers.manage({**env, "DATABASE_URL": database.url}, workdir / "seed.log", *command)
        a = group.start("host-a", {}, database)
        b = group.start("host-b", {}, database)
        yield Hosts(a, b, redis, database)
    finally:
        group.close(keep_logs=request.session.testsfailed > 0)
        redis.stop()
        database.drop()


@contextlib.contextmanager
def stream(
    client: Client, url: str, last_event_id: int | None = None
) -> Iterator[Iterator[tuple[int | None, str, Any]]]:
    """Follow a stream as (id, name, data) events; leaving the block hangs up."""
    headers = client.headers({"Last-Event-ID": str(last_event_id)} if last_event_id is not None else None)
    with client.http.stream("GET", url, headers=headers, timeout=httpx.Timeout(60.0)) as response:
        assert response.status_code == 200

        def events() -> Iterator[tuple[int | None, str, Any]]:
            event_id, name, data = None, None, []
            for line in response.iter_lines():
                if line.startswith("id:"):
                    event_id = int(line[3:].strip())
                elif line.startswith("event:"):
                    name = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                elif line == "" and name:
                    yield event_id, name, json.loads("\n".join(data))
                    event_id, name, data = None, None, []

        yield events()


def start_turn(client: Client, text: str = "Hello") -> tuple[str, str]:
    sid = client.new_chat()
    response = client.send(sid, text)
    assert response.status_code == 202, response.text
    return sid, response.json()["stream_url"]


def test_a_turn_on_host_a_streams_token_by_token_on_host_b(hosts):
    alice_a, alice_b = Client(hosts.a, "alice"), Client(hosts.b, "alice")
    sid, url = start_turn(alice_a)
    with stream(alice_b, url) as events:
        first = next(events)
        assert first == (0, "token", {"text": WORDS[0]})
        # the model has not finished: the turn still runs (seen from either host)
        assert alice_b.transcript(sid)["running"] is True
        rest = list(events)
    got = [first, *rest]
    assert [e for e in got if e[1] == "token"] == [(i, "token", {"text": w}) for i, w in enumerate(WORDS)]
    assert [(i, name) for i, name, _ in got if name in TERMINALS] == [(TOKENS, "done")]
    assert got[-1][2]["stop_reason"] == "end_turn"


def test_reconnecting_to_host_a_with_last_event_id_has_no_gap_and_no_duplicate(hosts):
    alice_a, alice_b = Client(hosts.a, "alice"), Client(hosts.b, "alice")
    _, url = start_turn(alice_a)
    with stream(alice_b, url) as events:
        before = [next(events) for _ in range(7)]  # then the connection drops mid-turn
    last = before[-1][0]
    with stream(alice_a, url, last_event_id=last) as events:
        after = list(events)
    ids = [i for i, _, _ in before + after]
    assert ids == list(range(TOKENS + 1))  # every event once, in order
    text = "".join(data["text"] for _, name, data in before + after if name == "token")
    assert text == "".join(WORDS)
    assert after[-1][1] == "done"


def test_a_stream_first_opened_on_host_b_after_the_turn_ended_gets_the_whole_turn_once(hosts):
    """Nobody followed the turn that ran on host A: the first stream, opened on host B once it ended,
    gets every event with its id, then `done`; a stream opened again, on either host, `done` alone."""
    alice_a, alice_b = Client(hosts.a, "alice"), Client(hosts.b, "alice")
    sid, url = start_turn(alice_a)
    assert alice_a.wait_idle(sid)["running"] is False
    with stream(alice_b, url) as events:
        first = list(events)
    assert [(i, name) for i, name, _ in first] == [*((i, "token") for i in range(TOKENS)), (TOKENS, "done")]
    assert "".join(data["text"] for _, name, data in first if name == "token") == "".join(WORDS)
    for client in (alice_a, alice_b, alice_a):  # (each host's two workers may answer)
        with stream(client, url) as events:
            assert list(events) == [first[-1]]


def test_stop_on_host_b_stops_the_turn_running_on_host_a(hosts):
    alice_a, alice_b = Client(hosts.a, "alice"), Client(hosts.b, "alice")
    sid, url = start_turn(alice_a)
    with stream(alice_a, url) as events:
        assert next(events)[1] == "token"
        assert alice_b.post_json(f"/api/agent/sessions/{sid}/stop").status_code == 202
        rest = list(events)
    terminal = [e for e in rest if e[1] in TERMINALS]
    assert len(terminal) == 1 and terminal[0][1] == "done"
    assert terminal[0][2]["stop_reason"] == "stopped"
    tokens = 1 + sum(1 for e in rest if e[1] == "token")
    assert tokens < TOKENS  # cut short: the database flag alone would not be looked at for a minute
    body = alice_a.wait_idle(sid)
    assert body["running"] is False
    assert body["messages"][-1]["stop_reason"] == "stopped"


def assert_valid(body: dict[str, Any]) -> None:
    uses = [p["id"] for m in body["messages"] for p in m["parts"] if p["type"] == "tool_use"]
    results = [p["tool_use_id"] for m in body["messages"] for p in m["parts"] if p["type"] == "tool_result"]
    assert sorted(uses) == sorted(results)
    positions = [m["position"] for m in body["messages"]]
    assert positions == sorted(set(positions))


def test_losing_redis_mid_turn_loses_nothing_and_new_turns_use_it_once_it_is_back(hosts):
    alice_a, alice_b = Client(hosts.a, "alice"), Client(hosts.b, "alice")
    sid, url = start_turn(alice_a)
    try:
        with stream(alice_b, url) as events:
            seen = [next(events) for _ in range(3)]
            hosts.redis.kill()
            seen += list(events)
        terminal = [e for e in seen if e[1] in TERMINALS]
        assert len(terminal) == 1 and terminal[0][1] == "done"  # exactly one, from the transcript
        body = alice_a.wait_idle(sid)
        assert body["running"] is False
        assert_valid(body)
        reply = body["messages"][-1]
        assert reply["role"] == "assistant" and reply["stop_reason"] == "end_turn"
        text = "".join(p["text"] for p in reply["parts"] if p["type"] == "text")
        assert text == "".join(WORDS)  # all of it
        # ... and so did the follower on B: its tokens up to the loss, then the rest from the transcript
        assert "".join(d["text"] for _, name, d in seen if name == "token") == text

        # Redis is still down: the next turn works, followed from the transcript (the reply whole).
        response = alice_a.send(sid, "And then?")
        assert response.status_code == 202, response.text
        with stream(alice_b, response.json()["stream_url"]) as events:
            next_turn = list(events)
        assert [name for _, name, _ in next_turn if name in TERMINALS] == ["done"]
        assert "".join(d["text"] for _, name, d in next_turn if name == "token") == "".join(SHORT)
    finally:
        hosts.redis.start()  # the same port: the hosts' clients find it again

    # Back: new turns stream token by token across hosts again (once each worker's client has
    # reconnected; each attempt is a whole turn that must end with one terminal event).
    for _attempt in range(25):
        response = alice_a.send(sid, "Once more")
        assert response.status_code == 202, response.text
        with stream(alice_b, response.json()["stream_url"]) as events:
            got = list(events)
        assert [name for _, name, _ in got if name in TERMINALS] == ["done"]
        if [e for e in got if e[1] == "token"] == [(i, "token", {"text": w}) for i, w in enumerate(SHORT)]:
            break
        alice_a.wait_idle(sid)
    else:
        pytest.fail("no turn was streamed token by token across hosts after Redis came back")
    assert_valid(alice_a.transcript(sid))


def test_a_post_created_through_host_a_refreshes_the_list_on_a_page_served_by_host_b(hosts, page):
    refreshes: list[str] = []
    page.on(
        "request", lambda r: refreshes.append(r.url) if urlsplit(r.url).path == "/blogs/field-notes/posts/" else None
    )
    login(page, hosts.b.url, "carol")  # a viewer: she only watches
    with page.expect_response(lambda r: urlsplit(r.url).path == "/blogs/field-notes/events/"):
        page.goto(f"{hosts.b.url}/blogs/field-notes/")  # listening once the stream has answered
    title = f"Written on host A {uuid.uuid4().hex[:6]}"
    expect(page.locator("#post-list")).not_to_contain_text(title)

    bob_a = Client(hosts.a, "bob")  # another member, through the blog's own form on the other host
    bob_a.get("/blogs/field-notes/posts/new/")
    response = bob_a.post_form("/blogs/field-notes/posts/new/", {"title": title, "body": "From A."})
    assert response.status_code == 302, response.text[:500]

    expect(page.locator("#post-list")).to_contain_text(title)
    assert refreshes  # the list was fetched again because the blog's channel said so
    assert page.url.startswith(hosts.b.url)
