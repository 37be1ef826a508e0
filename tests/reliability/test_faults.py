"""Faults through the real server: the provider misbehaves, tools fail, the browser leaves, the worker dies.

After each fault: the user's message is kept, the transcript is valid (every tool_use has its
tool_result), the session is not stuck, the user saw one calm line, the server log has the
operator detail, and the next turn works.

Every fault that involves the provider runs twice, on the same production server configured once with
`AGENT_BACKEND=openai` against the OpenAI-compatible stand-in and once with `AGENT_BACKEND=bedrock`
(boto3) against the Bedrock ConverseStream stand-in, each fault scripted in that provider's own wire
terms (`provider.throttled(...)`, `provider.cut_after(...)`, ...: `conftest.py`, `bedrock_standin.py`).
One server per backend is shared by all its tests. The hanging tool and the worker kill are not about
the provider and run once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from tests.reliability.conftest import (
    assert_calm_error,
    assert_one_terminal,
    assert_valid_transcript,
    make_post,
    parse_sse,
    wait_for,
)
from tests.servers import ROOT, pg_connect


@pytest.fixture(scope="session", params=("openai", "bedrock"))
def backend(request) -> str:
    """The provider behind the server (session-scoped: pytest runs each backend's tests together)."""
    return request.param


@pytest.fixture
def app(backend, request):
    return request.getfixturevalue(f"{backend}_app")


@pytest.fixture
def provider(backend, request):
    standin = request.getfixturevalue("standin" if backend == "openai" else "bedrock_standin")
    standin.reset()
    return standin


def _assistant_messages(body):
    return [m for m in body["messages"] if m["role"] == "assistant"]


def _log_says(log: str, provider, fault: str) -> bool:
    return f"backend {provider.name} failed" in log and any(word in log for word in provider.LOG[fault])


def test_a_normal_turn_streams_and_is_kept(app, provider, alice):
    provider.script(provider.text("Hello ", "there."))
    sid = alice.new_chat()
    turn = alice.turn(sid, "Hi")
    assert_one_terminal(turn)
    assert turn.terminal[0] == "done" and turn.text == "Hello there."
    assert_valid_transcript(alice.wait_idle(sid), user_text="Hi")
    if provider.name == "openai":  # the key really is sent, as a bearer token
        assert provider.requests[0].headers["authorization"] == f"Bearer {app.env['OPENAI_API_KEY']}"
    else:  # SigV4-signed with the configured key id (the secret only signs), for the configured model
        request = provider.requests[0]
        authorization = request["headers"]["Authorization"]
        assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential={app.env['AWS_ACCESS_KEY_ID']}/")
        assert "/us-east-1/bedrock/aws4_request" in authorization
        assert app.env["AWS_SECRET_ACCESS_KEY"] not in json.dumps(request["headers"])
        assert request["model"] == app.env["AGENT_MODEL"]


def test_429_then_success_is_retried_and_the_user_sees_only_the_answer(app, provider, alice):
    """Bedrock: a `ThrottlingException` (HTTP 429) with `Retry-After: 0`."""
    provider.script(provider.throttled("0"), provider.text("Answer ", "after a retry."))
    sid, mark = alice.new_chat(), app.mark()
    turn = alice.turn(sid, "Retry me")
    assert turn.terminal[0] == "done" and turn.text == "Answer after a retry."
    assert "error" not in turn.names
    assert len(provider.requests) == 2
    assert_valid_transcript(alice.wait_idle(sid), user_text="Retry me")
    log = app.log_since(mark)
    assert "retryable failure before output" in log and "HTTP 429" in log


def test_500_twice_ends_in_one_calm_error(app, provider, alice, next_turn_works):
    """Bedrock: `InternalServerException` (HTTP 500) on both attempts."""
    provider.script(*[provider.server_error("upstream exploded at shard 7") for _ in range(2)])
    sid, mark = alice.new_chat(), app.mark()
    turn = alice.turn(sid, "Fail with 500")
    assert_calm_error(turn)
    assert "shard 7" not in turn.raw
    body = alice.wait_idle(sid)
    assert_valid_transcript(body, user_text="Fail with 500")
    assert _assistant_messages(body)[-1]["stop_reason"] == "error"
    log = app.log_since(mark)
    assert f"backend {provider.name} failed" in log and "HTTP 500" in log and "upstream exploded at shard 7" in log
    next_turn_works(sid)


def test_connection_refused_ends_in_one_calm_error(app, provider, alice, next_turn_works):
    sid, mark = alice.new_chat(), app.mark()
    with provider.refusing():
        turn = alice.turn(sid, "Nobody home")
    assert_calm_error(turn)
    assert_valid_transcript(alice.wait_idle(sid), user_text="Nobody home")
    log = app.log_since(mark)
    assert _log_says(log, provider, "refused"), log
    next_turn_works(sid)


def test_reset_before_the_first_byte_is_retried_then_reported_calmly(app, provider, alice, next_turn_works):
    provider.script(provider.reset_first(), provider.text("Recovered."))
    sid, mark = alice.new_chat(), app.mark()
    turn = alice.turn(sid, "Reset once")
    assert turn.terminal[0] == "done" and turn.text == "Recovered."
    provider.script(provider.reset_first(), provider.reset_first())
    turn = alice.turn(sid, "Reset twice")
    assert_calm_error(turn)
    assert_valid_transcript(alice.wait_idle(sid), user_text="Reset twice")
    log = app.log_since(mark)
    assert _log_says(log, provider, "reset"), log
    next_turn_works(sid)


def test_drop_mid_stream_keeps_what_was_streamed_and_is_not_retried(app, provider, alice, next_turn_works):
    provider.script(provider.cut_after("Partial ", "answer"), provider.text("must not be used"))
    sid, mark = alice.new_chat(), app.mark()
    turn = alice.turn(sid, "Drop me")
    assert turn.text == "Partial answer"
    assert_calm_error(turn)
    assert len(provider.requests) == 1, "a stream that already showed tokens must not be retried"
    body = alice.wait_idle(sid)
    assert_valid_transcript(body, user_text="Drop me")
    last = _assistant_messages(body)[-1]
    assert last["stop_reason"] == "error" and last["parts"] == [{"type": "text", "text": "Partial answer"}]
    assert f"backend {provider.name} failed" in app.log_since(mark)
    provider.reset()
    next_turn_works(sid)


def test_stall_before_the_first_event_times_out_retries_once_and_reports_calmly(app, provider, alice, next_turn_works):
    """Bedrock: `messageStart`, then nothing. boto3 has one read timeout per client, so the adapter sets it to
    max(first-event, between-events) timeouts (`agent/backends/bedrock/backend.py`); here both are 1.5 s.
    `messageStart` is not output: the attempt is still retried."""
    provider.script(provider.stall_first(8), provider.stall_first(8))
    sid, mark = alice.new_chat(), app.mark()
    turn = alice.turn(sid, "Stall first")
    # Evidence that the timeouts cut both attempts: the turn was over while the provider still stalled.
    assert not provider.finished(-1), "the turn waited out the provider's 8 s stall"
    assert_calm_error(turn)
    assert len(provider.requests) == 2
    assert_valid_transcript(alice.wait_idle(sid), user_text="Stall first")
    log = app.log_since(mark)
    assert _log_says(log, provider, "timeout"), log
    next_turn_works(sid)


def test_stall_between_events_times_out_and_keeps_the_tokens(app, provider, alice, next_turn_works):
    provider.script(provider.stall_after("Half a ", 8))
    sid, mark = alice.new_chat(), app.mark()
    turn = alice.turn(sid, "Stall later")
    assert not provider.finished(-1), "the turn waited out the provider's 8 s stall"
    assert len(provider.requests) == 1  # tokens were shown: never retried
    assert turn.text == "Half a "
    assert_calm_error(turn)
    body = alice.wait_idle(sid)
    assert_valid_transcript(body, user_text="Stall later")
    assert _assistant_messages(body)[-1]["parts"][0]["text"] == "Half a "
    log = app.log_since(mark)
    assert _log_says(log, provider, "timeout"), log
    next_turn_works(sid)


def test_malformed_chunk_mid_stream_ends_in_one_calm_error(app, provider, alice, next_turn_works):
    """Bedrock: a frame whose message CRC is wrong (its payload, a text delta "not json at all", must never
    be shown)."""
    provider.script(provider.corrupt_after("Before the garbage. ", "not json at all"))
    sid, mark = alice.new_chat(), app.mark()
    turn = alice.turn(sid, "Garble")
    assert turn.text == "Before the garbage. "
    assert_calm_error(turn)
    assert "not json" not in turn.raw
    assert_valid_transcript(alice.wait_idle(sid), user_text="Garble")
    assert any(word in app.log_since(mark) for word in provider.LOG["corrupt"]), app.log_since(mark)
    next_turn_works(sid)


def test_invalid_tool_arguments_get_an_error_result_and_the_handler_never_runs(app, provider, alice, next_turn_works):
    posts = app.database.scalar("SELECT COUNT(*) FROM blog_post")
    provider.script(
        provider.tools(("call_badargs", "create_post", '{"title": "Never created", ')),
        provider.text("Those arguments were broken."),
    )
    sid = alice.new_chat()
    turn = alice.turn(sid, "Make a post")
    assert turn.terminal[0] == "done"
    result = next(d for n, d in turn.events if n == "tool_result")
    assert result["status"] == "error" and "not valid JSON" in result["result"]["error"]
    body = alice.wait_idle(sid)
    assert_valid_transcript(body, user_text="Make a post")
    assert app.database.scalar("SELECT COUNT(*) FROM blog_post") == posts
    # the model was told, in the tool message it reads next
    assert provider.tool_result_sent(1, "call_badargs")
    next_turn_works(sid)


def test_failing_tools_answer_error_results_and_the_turn_goes_on(app, provider, alice, next_turn_works):
    provider.script(
        provider.tools(
            ("call_missing", "update_post", {"post_id": 999999, "title": "Ghost"}),
            ("call_invalid", "create_post", {"title": ""}),
            ("call_unknown", "drop_all_tables", {}),
            ("call_extra", "get_post", {"post_id": 1, "sql": "DROP TABLE blog_post"}),
        ),
        provider.text("Some of that failed."),
    )
    sid = alice.new_chat()
    turn = alice.turn(sid, "Do four things")
    assert turn.terminal[0] == "done" and turn.text == "Some of that failed."
    results = {d["id"]: d for n, d in turn.events if n == "tool_result"}
    assert {r["status"] for r in results.values()} == {"error"}
    assert "no post with id 999999" in results["call_missing"]["result"]["error"]
    assert "Invalid input at title" in results["call_invalid"]["result"]["error"]
    assert "Unknown tool" in results["call_unknown"]["result"]["error"]
    assert "Additional properties" in results["call_extra"]["result"]["error"]
    assert_valid_transcript(alice.wait_idle(sid), user_text="Do four things")
    assert all(provider.tool_result_sent(1, call_id) for call_id in results)  # each error reached the model
    next_turn_works(sid)


def test_lone_surrogate_from_the_model_is_contained_and_the_chat_goes_on(app, provider, alice, next_turn_works):
    """Tool arguments are JSON, and JSON may spell a lone surrogate (``"\\ud800"``), which no UTF-8 encoder
    accepts. The loop turns it into "?" as the model's output arrives, so nothing downstream breaks: the
    stream answers 200 with one outcome, the tool runs on clean text, the transcript stays valid (and
    storable in PostgreSQL's jsonb), and the *next* message of the same chat works."""
    raw = '{"title": "bad \\ud800 title"}'
    provider.script(
        provider.tools(("call_raises", "create_post", raw), text="Odd \ud800 text"), provider.text("That did not work.")
    )
    sid, mark = alice.new_chat(), app.mark()
    response = alice.send(sid, "Odd title")
    assert response.status_code == 202
    with alice.http.stream("GET", response.json()["stream_url"], headers=alice.headers()) as stream:
        status, raw_stream = stream.status_code, stream.read().decode(errors="replace")
    assert status == 200, f"the event stream itself failed with {status} (UnicodeEncodeError in agent/sse.py)"
    terminals = [line for line in raw_stream.splitlines() if line in ("event: done", "event: error")]
    assert len(terminals) == 1 and "Traceback" not in raw_stream
    assert_valid_transcript(alice.wait_idle(sid), user_text="Odd title")
    results = [p for n, p in parse_sse(raw_stream) if n == "tool_result"]
    assert [(r["status"], r["result"]["title"]) for r in results] == [("ok", "bad ? title")]
    assert "".join(p["text"] for n, p in parse_sse(raw_stream) if n == "token").startswith("Odd ? text")
    assert "Traceback" not in app.log_since(mark)
    provider.reset()
    next_turn_works(sid)


HANG_PROBE = r"""
from gevent import monkey
monkey.patch_all()
import json, os, socket, time
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
os.environ["AGENT_TOOL_TIMEOUT_SECONDS"] = "0.5"
import django
django.setup()
from agent.tools import register, run_tool, unregister

listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)

@register("hang_on_io", purposes=("chat",))
def hang_on_io(session):
    conn = socket.create_connection(listener.getsockname())
    return {"got": conn.recv(1).decode()}  # the peer never writes: waits forever

@register("hang_sleeping", purposes=("chat",))
def hang_sleeping(session):
    time.sleep(60)
    return {}

out = {}
for name in ("hang_on_io", "hang_sleeping"):
    outcome = run_tool(None, {"id": "c1", "name": name, "input": {}}, purpose="chat")
    out[name] = {"status": outcome.status, "result": outcome.result}
print(json.dumps(out))
"""


def test_a_hanging_tool_is_cut_at_the_per_tool_time_limit_under_gevent():
    """No real tool can hang (each is a few short queries), so register hanging ones in a gevent process."""
    result = subprocess.run(
        [sys.executable, "-c", HANG_PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
    )
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    for name in ("hang_on_io", "hang_sleeping"):
        assert out[name]["status"] == "error"
        # (evidence of the cut: one tool never returns, the other would have answered {} after 60 s)
        assert "took too long" in out[name]["result"]["error"]
    assert "ran past its time limit" in result.stderr


def test_browser_disconnect_mid_stream_does_not_cut_the_turn(app, provider, alice, next_turn_works):
    words = [f"w{i} " for i in range(10)]
    provider.script(provider.text(*words, delay=0.2))
    sid = alice.new_chat()
    accepted = alice.send(sid, "Long answer please")
    assert accepted.status_code == 202
    url = accepted.json()["stream_url"]
    with alice.open_stream(url) as events:
        for name, _ in events:
            if name == "token":
                break  # the tab closes after the first token
    body = alice.wait_idle(sid)
    assert_valid_transcript(body, user_text="Long answer please")
    assert _assistant_messages(body)[-1]["parts"] == [{"type": "text", "text": "".join(words)}]
    again = alice.read_stream(url)
    # At once: the finished turn's events as they stand (its channel's, or its terminal event alone once no
    # channel is left), ending with its one `done`, and no heartbeat, so nothing was waited for.
    names = [n for n, _ in parse_sse(again)]
    assert names[-1] == "done" and names.count("done") == 1 and "error" not in names, names
    assert ": keep-alive" not in again
    html = alice.read_stream(url, flavour="html")
    assert html.count("event: done") == 1 and html.rstrip().endswith("data: end")
    assert len(provider.requests) == 1, "re-opening a stream never runs the model again"
    next_turn_works(sid)


def _kill_worker(app) -> int:
    workers = app.worker_pids()
    assert len(workers) == 1, workers
    os.kill(workers[0], signal.SIGKILL)
    return workers[0]


def _accept_after_lease(alice, sid, text, timeout=20.0):
    """POST until accepted: before the dead turn's lease expires the answer is 409, never an error page."""
    deadline, seen = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        try:
            response = alice.send(sid, text)
        except httpx.TransportError:
            seen.append("down")
            time.sleep(0.2)
            continue
        seen.append(response.status_code)
        if response.status_code == 202:
            return response, seen
        assert response.status_code == 409 and response.json()["error"]["code"] == "turn_in_progress", response.text
        time.sleep(0.3)
    raise AssertionError(f"never accepted: {seen}")


@pytest.mark.parametrize("backend", ["openai"])  # the worker, not the provider: once is enough
def test_worker_killed_mid_turn_is_reclaimed_after_the_lease(app, provider, alice):
    """kill -9 the gunicorn worker mid-turn; the master restarts it; after AGENT_TURN_LEASE_SECONDS the
    next message is accepted and the dead turn's unanswered tool calls get error results."""
    post_id = make_post(alice, "Locked while the worker dies", "unchanged body")
    sid = alice.new_chat()
    lock = None
    if app.database.postgres:
        # Hold the post's row lock so update_post blocks after its tool_use is stored: an orphan call.
        lock = pg_connect(app.database.url, autocommit=False)
        lock.execute("SELECT id FROM blog_post WHERE id = %s FOR UPDATE", (post_id,))
        provider.script(provider.tools(("call_orphan", "update_post", {"post_id": post_id, "body": "changed"})))
    else:
        # SQLite: a finished tool cycle, then a slow answer that the kill cuts.
        provider.script(
            provider.tools(("call_done_before_kill", "list_posts", {})),
            provider.text(*[f"t{i} " for i in range(30)], delay=0.3),
        )
    accepted = alice.send(sid, "Work, then die")
    assert accepted.status_code == 202
    old_worker = None
    try:
        if lock is not None:
            assert wait_for(
                lambda: app.database.scalar("SELECT COUNT(*) FROM agent_part WHERE tool_use_id = 'call_orphan'"),
                timeout=10,
            )
            time.sleep(0.3)  # update_post is now waiting on the row lock
            old_worker = _kill_worker(app)
        else:
            with contextlib.suppress(httpx.HTTPError), alice.open_stream(accepted.json()["stream_url"]) as events:
                tokens = 0
                for name, _ in events:
                    tokens += name == "token"
                    if tokens == 2:
                        old_worker = _kill_worker(app)
    finally:
        if lock is not None:
            lock.rollback()
            lock.close()
    assert old_worker is not None
    assert wait_for(lambda: [p for p in app.worker_pids() if p != old_worker], timeout=20), "no new worker"
    provider.script(provider.text("I am back."))
    mark = app.mark()
    response, seen = _accept_after_lease(alice, sid, "Are you back?")
    events = alice.read_stream(response.json()["stream_url"])
    assert "event: done" in events and "I am back." in events
    body = alice.wait_idle(sid)
    assert_valid_transcript(body, user_text="Work, then die")
    assert_valid_transcript(body, user_text="Are you back?")
    assert "reclaiming turn" in app.log_since(mark)
    assert (
        app.database.scalar(
            "SELECT COUNT(*) FROM agent_turn WHERE session_id = %s AND status = 'running'",
            (sid.replace("-", "") if not app.database.postgres else sid,),
        )
        == 0
    )
    if lock is not None:
        results = [
            p
            for m in body["messages"]
            for p in m["parts"]
            if p["type"] == "tool_result" and p["tool_use_id"] == "call_orphan"
        ]
        assert len(results) == 1 and results[0]["status"] == "error"
        assert "interrupted" in results[0]["result"]["error"]
        assert app.database.scalar("SELECT body FROM blog_post WHERE id = %s", (post_id,)) == "unchanged body"


def test_database_trouble_mid_turn_is_survived(app, provider, alice, next_turn_works):
    """PostgreSQL: every backend of the bench database is terminated again and again during a turn
    (pg_terminate_backend, not a cluster restart: the cluster is shared with other test runs).
    SQLite: another process holds the write lock for 2 s in the middle of the turn."""
    provider.script(
        provider.tools(("call_db_1", "list_posts", {})),
        provider.tools(("call_db_2", "get_post", {"post_id": 1})),
        provider.text(*[f"d{i} " for i in range(12)], delay=0.15),
    )
    sid, mark = alice.new_chat(), app.mark()
    accepted = alice.send(sid, "Survive the database")
    assert accepted.status_code == 202
    stop = threading.Event()

    kill = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"

    def terminate_backends():
        with pg_connect(app.database.url, "postgres") as admin:
            while not stop.is_set():
                admin.execute(kill, (app.database.pg_name,))
                time.sleep(0.03)

    def hold_sqlite_lock():
        conn = app.database.connect()
        conn.execute("BEGIN IMMEDIATE")
        stop.wait(2.0)
        conn.execute("ROLLBACK")
        conn.close()

    worker = threading.Thread(target=terminate_backends if app.database.postgres else hold_sqlite_lock)
    worker.start()
    try:
        time.sleep(2.0)
    finally:
        stop.set()
        worker.join()
    if app.database.postgres:
        # Once the turn is over, kill every connection again: those idle in the worker's pool die there, and
        # the next request (the stream below) must be handed a live one, not a 500.
        turn_id = accepted.json()["stream_url"].split("/turns/")[1].split("/")[0]
        # How long the turn may take to record its end is bounded by the pool, not by this test: the storm
        # leaves dead connections idle in the pool, and psycopg_pool hands them out oldest first with a
        # growing pause after each that fails its check (1, 2, 4, 8 s), so the turn's first retry can wait
        # the pool's whole timeout before its next retry gets a fresh connection (RELIABILITY.md, "After a
        # storm, one request can wait the pool's whole timeout"). "Never" is anything past that.
        pool_timeout = float(app.env.get("DATABASE_POOL_TIMEOUT", "30"))
        assert wait_for(
            lambda: app.database.scalar("SELECT status FROM agent_turn WHERE id = %s", (turn_id,)) != "running",
            timeout=pool_timeout + 15,
        ), "the turn never finished"
        # The storm may have outlasted the turn and killed the last connection the pool opened (the pool
        # finds that out only when it hands it out again, and reconnects with a backoff meanwhile): a
        # request now leaves a live connection idle in the pool, whatever the storm's timing was.
        assert alice.transcript(sid)["id"] == sid
        with pg_connect(app.database.url, "postgres") as admin:
            # Wait until the pool holds that connection, then kill it: the stream below is the next request.
            opened = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
            assert wait_for(lambda: admin.execute(opened, (app.database.pg_name,)).fetchone()[0] > 0, timeout=20), (
                "the app's pool never opened a connection again"
            )
            assert admin.execute(kill, (app.database.pg_name,)).fetchall(), "no connection of the app to kill"
    # pg_terminate_backend only signals: the last victims die a moment later. Read once they are gone.
    time.sleep(0.5)
    raw = alice.read_stream(accepted.json()["stream_url"])
    terminal = [line for line in raw.splitlines() if line in ("event: done", "event: error")]
    assert len(terminal) == 1, raw
    body = wait_for(lambda: (b := alice.transcript(sid)) and not b["running"] and b, timeout=15)
    assert body, "the session is stuck running after the database came back"
    assert_valid_transcript(body, user_text="Survive the database")
    if terminal[0] == "event: error":
        error = json.loads(raw.split("event: error\n", 1)[1].split("\n", 1)[0][6:])
        assert error["code"] in ("chat_error", "provider_error") and "Traceback" not in raw
        assert "Traceback" in app.log_since(mark) or "failed" in app.log_since(mark)
    provider.reset()
    next_turn_works(sid)


def test_lease_is_kept_while_the_provider_makes_the_turn_wait(app, provider, alice):
    """A live turn waiting on the provider (a Retry-After longer than the lease) still owns its session:
    a second message is refused with 409 instead of reclaiming the live turn as if its worker died.

    On `app`, right after the connection storm of the test before: the process's lease watcher renews
    on a connection of its own, so the pool rebuilding its connections (psycopg_pool reconnects with a
    backoff) cannot make it wait past this test's 3 s lease (it did: RELIABILITY.md, "Product bugs").
    Bedrock: a `ThrottlingException` (HTTP 429) with `Retry-After: 8`, waited in full like any server's
    (docs/engine.md, "Backends", Errors)."""
    provider.script(provider.throttled("8", "busy"), provider.text("Finally."))
    sid = alice.new_chat()
    claimed = time.monotonic()  # (the lease is taken while the message is accepted: it runs out 3 s after this)
    first = alice.send(sid, "Wait for the provider")
    assert first.status_code == 202
    assert wait_for(lambda: len(provider.requests) == 1, timeout=10), "the first turn never called the provider"
    time.sleep(max(0.0, claimed + 3.5 - time.monotonic()))  # the lease it claimed has run out
    second = alice.send(sid, "Me too")
    still_waiting = len(provider.requests) == 1  # the first turn had not retried yet: it was alive and waiting
    try:
        assert second.status_code == 409, (
            f"a second turn was accepted ({second.status_code}) while the first was alive: the lease is not "
            "renewed while the loop waits on the provider"
        )
        assert still_waiting, "inconclusive: the first turn had already retried (the machine is too slow)"
    finally:
        alice.wait_idle(sid, timeout=20)
    raw = alice.read_stream(first.json()["stream_url"])
    assert "event: done" in raw and "Finally." in raw
    assert len(provider.requests) == 2  # the 429, then the retry: the second message never reached the model
    assert_valid_transcript(alice.wait_idle(sid), user_text="Wait for the provider")
    provider.script(provider.text("Back ", "to normal."))  # and the chat goes on
    turn = alice.turn(sid, "Are you there?")
    assert turn.terminal[0] == "done" and turn.text == "Back to normal.", turn.events


def test_a_stalled_reader_never_holds_up_the_turn_or_other_readers(app, provider, alice):
    """One stream of a turn reads nothing while the turn streams megabytes: its socket fills and its
    writes block, yet the turn runs to its end and another reader of the same turn gets every event.
    Once the stalled reader reads again, it gets the whole turn too, nothing lost."""
    import socket

    words = [f"{i:05d}" + "x" * 994 + " " for i in range(4000)]  # ~4 MB: more than the socket buffers hold
    provider.script(provider.text(*words))
    sid = alice.new_chat()
    accepted = alice.send(sid, "Say a lot")
    assert accepted.status_code == 202
    url = accepted.json()["stream_url"]

    stalled = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect(("127.0.0.1", app.port))
    cookies = "; ".join(f"{k}={v}" for k, v in alice.jar.items())
    stalled.sendall(f"GET {url} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: {cookies}\r\n\r\n".encode())
    try:
        other = parse_sse(alice.read_stream(url, deadline=60.0))  # the turn and this reader go on
        assert other[-1][0] == "done"
        assert "".join(p["text"] for n, p in other if n == "token") == "".join(words)
        body = alice.wait_idle(sid)
        assert not body["running"]
        assert _assistant_messages(body)[-1]["parts"] == [{"type": "text", "text": "".join(words)}]

        stalled.settimeout(30.0)
        received = b""
        while b"event: done" not in received:
            piece = stalled.recv(1 << 16)
            assert piece, "the stalled reader's stream closed before its end"
            received += piece
        head, _, rest = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        assert rest.count(b"event: token") >= len(words)
    finally:
        stalled.close()
