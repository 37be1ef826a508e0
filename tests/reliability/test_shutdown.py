"""A graceful stop (SIGTERM: a deploy, a restart) with a blog page open and an answer streaming.

gunicorn stops taking connections and waits for the open ones. The page's live stream
(`/blogs/<slug>/events/`) is ended at once, cleanly, so the page connects again elsewhere; the
answer that is streaming goes on to its end; then the worker exits by itself, not when gunicorn's
graceful timeout runs out (which cut the page's stream mid-chunk).
"""

from __future__ import annotations

import signal
import threading
import time

import httpx
import pytest

from tests.reliability.conftest import FAULT_SETTINGS, Client, parse_sse, wait_for

WORDS = [f"w{i} " for i in range(8)]


@pytest.fixture
def server(server_factory, standin):
    """A server of this test's own: the test stops it."""
    return server_factory("shutdown", {**FAULT_SETTINGS, "OPENAI_BASE_URL": standin.url})


def _read(client: Client, path: str, into: dict) -> None:
    """Read a stream to its end; records the bytes and how it ended ("end" or the error)."""
    body = b""
    try:
        headers = {**client.headers(), "Accept": "text/event-stream"}  # as a page's EventSource asks
        with client.http.stream("GET", path, headers=headers, timeout=60.0) as response:
            into["status"] = response.status_code
            for piece in response.iter_bytes():
                body += piece
                into["body"] = body
        into["ended"] = "end"
    except httpx.HTTPError as exc:
        into["ended"] = repr(exc)


def test_sigterm_ends_live_page_streams_and_lets_the_running_answer_finish(server, standin):
    standin.reset()
    alice = Client(server, "alice")
    try:
        page: dict = {}
        watching = threading.Thread(target=_read, args=(alice, "/blogs/field-notes/events/", page), daemon=True)
        watching.start()
        wait_for(lambda: page.get("body"), timeout=10)  # the page listens (its first byte came)

        standin.script(standin.text(*WORDS, delay=0.25))  # an answer of ~2 s
        sid = alice.new_chat()
        response = alice.send(sid, "Write slowly.")
        assert response.status_code == 202, response.text
        answer: dict = {}
        reading = threading.Thread(target=_read, args=(alice, response.json()["stream_url"], answer), daemon=True)
        reading.start()
        wait_for(lambda: b"event: token" in answer.get("body", b""), timeout=10)  # it is streaming

        mark = server.mark()
        server.process.send_signal(signal.SIGTERM)

        watching.join(timeout=30)
        assert page.get("ended") == "end", page  # closed cleanly (was: cut when the worker was killed)
        reading.join(timeout=30)
        assert answer.get("ended") == "end", answer
        events = parse_sse(answer["body"].decode())
        assert events[-1][0] == "done", events[-3:]
        assert "".join(p["text"] for name, p in events if name == "token") == "".join(WORDS)

        assert server.process.wait(timeout=30) == 0
        log = server.log_since(mark)
        assert "Worker exiting" in log, log
        assert "graceful timeout" not in log, log  # it did not wait for a stream it had to cut
    finally:
        alice.close()


def _turn_after_stop(server, standin, words: list[str], delay: float, *, fault=None) -> tuple[float, list, list, list]:
    """Start an answer nobody streams (the tab was closed), stop the server gracefully, and read back
    how long it took, the chat's turns, its lease and its assistant messages."""
    standin.reset()
    alice = Client(server, "alice")
    standin.script(fault or standin.text(*words, delay=delay))
    sid = alice.new_chat()
    assert alice.send(sid, "Write slowly.").status_code == 202
    wait_for(lambda: standin.requests, timeout=10)  # the turn talks to its model
    alice.close()  # nobody follows it on this worker
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=60) == 0
    took = time.monotonic() - started
    key = sid if server.database.postgres else sid.replace("-", "")
    turns = server.database.query("SELECT status, terminal_event FROM agent_turn WHERE session_id = %s", (key,))
    lease = server.database.query("SELECT turn_id, lease_until FROM agent_session WHERE id = %s", (key,))
    texts = server.database.query(
        "SELECT p.text FROM agent_part p JOIN agent_message m ON p.message_id = m.id"
        " WHERE m.session_id = %s AND m.role = 'assistant' AND p.type = 'text'",
        (key,),
    )
    return took, [tuple(t) for t in turns], [tuple(row) for row in lease], [row[0] for row in texts]


def test_sigterm_lets_a_turn_nobody_streams_finish_before_the_worker_exits(server_factory, standin):
    """The worker drains connections, not turns: one with no stream open here (a closed tab, or a
    stream on another host) was cut, its lease held the chat, and what it wrote was lost."""
    server = server_factory("shutdown-unstreamed", {**FAULT_SETTINGS, "OPENAI_BASE_URL": standin.url})
    words = [f"w{i} " for i in range(12)]
    took, turns, lease, texts = _turn_after_stop(server, standin, words, delay=0.25)
    assert took >= 2  # it waited for the answer (~3 s) ...
    assert turns == [("done", "done")] and lease == [(None, None)]  # ... which ended, giving the chat back
    assert texts == ["".join(words)]


def test_sigterm_stops_a_turn_that_would_outlast_the_grace_and_keeps_what_it_wrote(server_factory, standin):
    settings = {**FAULT_SETTINGS, "OPENAI_BASE_URL": standin.url, "GUNICORN_CMD_ARGS": "--graceful-timeout 6"}
    server = server_factory("shutdown-long", settings)
    took, turns, lease, texts = _turn_after_stop(server, standin, [f"w{i} " for i in range(60)], delay=0.5)
    assert took < 6  # within the grace, before the master would kill it
    assert turns == [("stopped", "done")] and lease == [(None, None)]
    assert len(texts) == 1 and texts[0].startswith("w0 w1 ") and "w59" not in texts[0]


def test_sigterm_stops_a_turn_streamed_here_that_would_outlast_the_grace_and_its_stream_ends_with_it(
    server_factory, standin
):
    """The open stream holds gunicorn's drain of connections, and the turns were asked to stop only
    after it (`worker_exit`): at the end of the grace the stream was cut mid-chunk, the turn was left
    `running` holding the chat's lease, and what it wrote was lost (a deploy, or a HUP, mid-answer)."""
    settings = {**FAULT_SETTINGS, "OPENAI_BASE_URL": standin.url, "GUNICORN_CMD_ARGS": "--graceful-timeout 6"}
    server = server_factory("shutdown-streamed", settings)
    standin.reset()
    alice = Client(server, "alice")
    try:
        standin.script(standin.text(*[f"w{i} " for i in range(60)], delay=0.5))  # ~30 s
        sid = alice.new_chat()
        response = alice.send(sid, "Write slowly.")
        assert response.status_code == 202, response.text
        answer: dict = {}
        reading = threading.Thread(target=_read, args=(alice, response.json()["stream_url"], answer), daemon=True)
        reading.start()
        wait_for(lambda: b"event: token" in answer.get("body", b""), timeout=10)  # it streams from this worker
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        reading.join(timeout=30)
        assert time.monotonic() - started < 6  # within the grace, before the master would kill the worker
        assert answer.get("ended") == "end", answer  # the stream ended whole ...
        events = parse_sse(answer["body"].decode())
        assert events[-1][0] == "done" and events[-1][1]["stop_reason"] == "stopped", events[-3:]  # ... stopped
        assert server.process.wait(timeout=30) == 0
    finally:
        alice.close()
    key = sid if server.database.postgres else sid.replace("-", "")
    assert server.database.query("SELECT status, terminal_event FROM agent_turn WHERE session_id = %s", (key,)) == [
        ("stopped", "done")
    ]
    assert server.database.query("SELECT turn_id, lease_until FROM agent_session WHERE id = %s", (key,)) == [
        (None, None)
    ]
    streamed = "".join(p["text"] for name, p in events if name == "token")
    texts = server.database.query(
        "SELECT p.text FROM agent_part p JOIN agent_message m ON p.message_id = m.id"
        " WHERE m.session_id = %s AND m.role = 'assistant' AND p.type = 'text'",
        (key,),
    )
    assert [row[0] for row in texts] == [streamed] and streamed.startswith("w0 w1 ")


def test_sigterm_stops_a_turn_whose_model_is_silent(server_factory, standin):
    """A model that stops talking (thinking, say) is stopped in time too: its read is cut, where the
    Stop flag alone waited for a next event that came after the worker had exited."""
    settings = {
        **FAULT_SETTINGS,
        "OPENAI_BASE_URL": standin.url,
        "GUNICORN_CMD_ARGS": "--graceful-timeout 6",
        "AGENT_FIRST_EVENT_TIMEOUT_SECONDS": "60",
        "AGENT_EVENT_TIMEOUT_SECONDS": "60",
    }
    server = server_factory("shutdown-silent", settings)
    took, turns, lease, texts = _turn_after_stop(
        server, standin, [], 0, fault=standin.stall_after("Let me think. ", 60)
    )
    assert took < 6
    assert turns == [("stopped", "done")] and lease == [(None, None)]
    assert texts == ["Let me think. "]
