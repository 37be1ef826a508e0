"""A Stop reaches a model call that waits on a silent server: the read is cut, no retry is made.

The HTTP adapters share one read path (`HttpBackend._attempt`), so the OpenAI-compatible one stands
for the others here; Bedrock's is run in a gevent-patched process, as in production, where closing
its event stream from another greenlet ends a read blocked on it.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from agent.backends.base import CallContext, Interrupt, call_context, interruptible
from agent.backends.openai import OpenAIBackend
from agent.backends.retry import stream_with_retries
from agent.backends.watchdog import cut_response
from agent.exceptions import BackendError
from tests.agent.backends.openai_server import Reply, sse

BACKEND = OpenAIBackend
KEY = "sk-test-SECRET-0123456789abcdef"
USER = [{"role": "user", "parts": [{"type": "text", "text": "Hello"}]}]
SILENCE = 30.0  # longer than any test may take: a read that waits it out was never cut


def chunk(content: str | None = None, finish: str | None = None) -> dict:
    delta = {"content": content} if content is not None else {}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@pytest.fixture
def interrupt():
    interrupt = Interrupt()
    token = call_context.set(CallContext("s1", None, interrupt=interrupt))
    yield interrupt
    call_context.reset(token)


def test_a_stop_cuts_a_read_waiting_on_a_silent_model(server, make_backend, interrupt):
    server.script(Reply(body=sse(chunk("Hel"), chunk("lo"), chunk(finish="stop")), pause_before={1: SILENCE}))
    events = make_backend(first_event_timeout=60, event_timeout=60).stream(
        system="", messages=USER, tools=[], model="m1"
    )
    assert next(events) == {"kind": "text", "text": "Hel"}
    threading.Timer(0.2, interrupt.fire).start()
    with pytest.raises(BackendError):
        next(events)  # without the cut: "lo" after the silence
    assert len(server.requests) == 1 and server.requests[0].pieces_sent == 1  # and no retry


def test_a_stop_before_the_answer_began_is_not_retried(server, make_backend, sleeps, interrupt):
    server.script(Reply(body=sse(chunk("late")), pause_before={0: SILENCE}))
    server.once_asked(interrupt.fire)  # (before the answer began)
    with pytest.raises(BackendError):
        list(make_backend(retries=3, first_event_timeout=60).stream(system="", messages=USER, tools=[], model="m1"))
    assert len(server.requests) == 1 and sleeps == []


def test_a_late_cut_leaves_alone_a_connection_given_back_to_the_pool(server):
    """A response read to its end gives its connection back to the pool, where the next request takes
    it; a cut that comes late (a Stop as the call ends) must not shut that request's socket down."""
    server.script(
        Reply(body='{"id": "c1"}', headers={"Content-Type": "application/json"}),
        Reply(body=sse(chunk("a"), chunk("b"), chunk(finish="stop")), pause_before={1: 0.5}),
    )
    with httpx.Client() as client:
        with client.stream("POST", f"{server.url}/chat/completions", json={}) as first:
            first.read()
        with client.stream("POST", f"{server.url}/chat/completions", json={}) as second:
            assert second.extensions["network_stream"] is first.extensions["network_stream"]  # reused
            cut_response(first)
            body = second.read()
    assert body.endswith(b"data: [DONE]\n\n")


def test_without_a_turn_nothing_is_cut(server, backend):
    """A call made outside a turn (no Interrupt) reads as it always did."""
    server.script(Reply(body=sse(chunk("a"), chunk("b"), chunk(finish="stop")), delay=0.01))
    events = list(backend.stream(system="", messages=USER, tools=[], model="m1"))
    assert "".join(e["text"] for e in events if e["kind"] == "text") == "ab"


def test_a_stop_ends_the_wait_before_a_retry(interrupt):
    attempts = []

    def failing():
        attempts.append(1)
        raise BackendError("overloaded", retryable=True, retry_after=SILENCE / 2)
        yield  # (a generator, as an adapter's attempt is)

    threading.Timer(0.2, interrupt.fire).start()
    with pytest.raises(BackendError, match="overloaded"):
        list(stream_with_retries(failing, retries=3))
    assert len(attempts) == 1


def test_a_cut_is_made_only_while_its_block_runs():
    interrupt, cuts = Interrupt(), []
    token = call_context.set(CallContext("s1", None, interrupt=interrupt))
    try:
        with interruptible(lambda: cuts.append("first")):
            pass
        interrupt.fire()  # the first response was given back: never cut
        assert cuts == [] and interrupt.fired
        with interruptible(lambda: cuts.append("second")):  # fired while the request was sent: cut at once
            assert cuts == ["second"]
    finally:
        call_context.reset(token)
    assert interrupt.wait(0) is True


BEDROCK_UNDER_GEVENT = """
from gevent import monkey; monkey.patch_all()
import os, sys, threading, time
os.environ.update(AWS_ACCESS_KEY_ID="AKIDTESTDUMMY0000000", AWS_SECRET_ACCESS_KEY="dummy",
                  AWS_EC2_METADATA_DISABLED="true", AWS_CONFIG_FILE="/nonexistent", AWS_SHARED_CREDENTIALS_FILE="/nonexistent")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.agent.settings")
import django; django.setup()
import gevent
from agent.backends.base import CallContext, Interrupt, call_context
from agent.backends.bedrock import BedrockBackend
from agent.exceptions import BackendError
from tests.agent.backends.bedrock_server import BedrockStubServer

text = lambda piece: {"contentBlockDelta": {"delta": {"text": piece}, "contentBlockIndex": 0}}
with BedrockStubServer() as server:
    server.add({"events": [{"messageStart": {"role": "assistant"}}, text("Hel"),
                           {"sleep": %(silence)s}, text("lo"), {"messageStop": {"stopReason": "end_turn"}}]})
    backend = BedrockBackend(endpoint_url=server.url, region="us-east-1", retries=2,
                             first_event_timeout=60, event_timeout=60, prompt_caching=False)
    interrupt = Interrupt()
    got = []
    def read():
        call_context.set(CallContext("s1", None, interrupt=interrupt))  # (a greenlet's own context, as a turn's)
        try:
            for event in backend.stream(system="", messages=[{"role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
                                        tools=[], model="anthropic.claude-3-5-haiku-20241022-v1:0"):
                got.append(event)
                if event.get("text") == "Hel":
                    gevent.spawn_later(0.2, interrupt.fire)
        except BackendError as exc:
            got.append("cut")
    started = time.monotonic()
    gevent.spawn(read).join(timeout=%(silence)s)
    assert got[-1] == "cut", got
    assert [e.get("text") for e in got[:-1]] == ["Hel"], got
    assert len(server.requests) == 1, len(server.requests)
print("ok")
"""


def test_a_stop_cuts_bedrocks_read_under_gevent():
    root = Path(__file__).resolve().parents[3]
    script = BEDROCK_UNDER_GEVENT % {"silence": SILENCE}
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=SILENCE * 2)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")
