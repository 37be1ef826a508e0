"""A graceful stop (SIGTERM: a deploy, a restart) with a blog page open and an answer streaming.

gunicorn stops taking connections and waits for the open ones. The page's live stream
(`/blogs/<slug>/events/`) is ended at once, cleanly, so the page connects again elsewhere; the
answer that is streaming goes on to its end; then the worker exits by itself, not when gunicorn's
graceful timeout runs out (which cut the page's stream mid-chunk).
"""

from __future__ import annotations

import signal
import threading

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
        with client.http.stream("GET", path, headers=client.headers(), timeout=60.0) as response:
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
