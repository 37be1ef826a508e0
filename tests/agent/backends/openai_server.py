"""A loopback OpenAI-compatible `/chat/completions` server that answers from a script.

A real `http.server.ThreadingHTTPServer` on 127.0.0.1 (HTTP/1.1, chunked bodies, daemon threads).
It records every request (method, path, headers, JSON body) and answers each one with the next
scripted `Reply`: a status, headers and a raw body written in one or several pieces, optionally with
a delay before each piece, a stall after the last piece, or the connection cut before the body ends.

In tests::

    server = ScriptedOpenAIServer()
    server.start()
    server.script(Reply(body=["data: {...}\\n\\n", "data: [DONE]\\n\\n"], delay=0.01))
    backend = OpenAIBackend(base_url=server.url, ...)
    ...
    server.requests[0].body["model"]
    server.stop()

By hand (serves the scripted stream to any client; once the list is used up the last reply repeats)::

    python -m tests.agent.backends.openai_server --port 8089 --script file.json
    OPENAI_BASE_URL=http://127.0.0.1:8089/v1 AGENT_BACKEND=openai ...

`file.json` holds one reply object or a list of them, with the `Reply` field names::

    {"status": 200, "headers": {"Retry-After": "1"}, "body": ["data: {...}\\n\\n", "data: [DONE]\\n\\n"],
     "delay": 0.05, "stall": 0, "cut": false}

`body` is a string or a list of strings (pieces written and flushed separately).
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["RecordedRequest", "Reply", "ScriptedOpenAIServer", "sse", "closed_port"]


@dataclass
class Reply:
    """One scripted answer. `body` pieces are written separately (each flushed as one HTTP chunk)."""

    status: int = 200
    body: str | bytes | list[str | bytes] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before each piece
    stall: float = 0.0  # seconds to wait after the last piece, before ending the body
    cut: bool = False  # close the connection without finishing the chunked body
    pause_before: dict[int, float] = field(default_factory=dict)  # piece index -> seconds, instead of `delay`

    def pieces(self) -> list[bytes]:
        items = self.body if isinstance(self.body, list) else [self.body]
        return [item.encode() if isinstance(item, str) else item for item in items]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reply:
        return cls(**{key: data[key] for key in ("status", "body", "headers", "delay", "stall", "cut") if key in data})


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    raw: bytes
    body: Any  # parsed JSON, or None
    pieces_sent: int = 0  # body pieces written to the client
    hung_up: bool = False  # the client closed the connection before the answer ended
    finished: threading.Event = field(default_factory=threading.Event)  # set once the answer is over


def sse(*payloads: Any, done: bool = True, newline: str = "\n") -> list[str]:
    """`data:` events for each payload (dicts are JSON-encoded, strings sent as-is), then `[DONE]`."""
    events = [f"data: {p if isinstance(p, str) else json.dumps(p)}{newline}{newline}" for p in payloads]
    return events + ([f"data: [DONE]{newline}{newline}"] if done else [])


def closed_port() -> int:
    """A loopback port nothing listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet by default
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:  # the client went away (timeouts, cut connections): nothing to answer
            self.close_connection = True

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        owner = self.server.owner
        request = RecordedRequest("POST", self.path, headers, raw, body)
        owner.record(request)
        try:
            self._answer(owner.next_reply(), owner.stopping, request)
        except OSError:
            self.close_connection = request.hung_up = True
        finally:
            request.finished.set()

    def _answer(self, reply: Reply, stopping: threading.Event, request: RecordedRequest) -> None:
        self.send_response(reply.status)
        default_type = "text/event-stream" if reply.status < 300 else "application/json"
        headers = {"Content-Type": default_type, **reply.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index, piece in enumerate(reply.pieces()):
            wait = reply.pause_before.get(index, reply.delay)
            if wait and stopping.wait(wait):
                return
            if piece:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                request.pieces_sent += 1
        if reply.stall and stopping.wait(reply.stall):
            return
        if reply.cut:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    owner: ScriptedOpenAIServer


class ScriptedOpenAIServer:
    """Start with `start()`, enqueue replies with `script()`, read `requests`, end with `stop()`."""

    def __init__(self, replies: list[Reply] | None = None, *, port: int = 0, repeat_last: bool = False) -> None:
        self._replies: deque[Reply] = deque(replies or [])
        self._lock = threading.Lock()
        self._last: Reply | None = None
        self.repeat_last = repeat_last
        self.requests: list[RecordedRequest] = []
        self.asked = threading.Event()  # set once a request has come in (`requests` holds it)
        self.stopping = threading.Event()
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._serve, name="openai-server", daemon=True)

    def _serve(self) -> None:
        self._httpd.serve_forever(poll_interval=0.05)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
        self.asked.set()

    def once_asked(self, action: Callable[[], object], timeout: float = 60.0) -> None:
        """Run `action` in a thread of its own once a request has come in (a Stop pressed while the
        model is asked, however slow the machine is to ask it); after `timeout` seconds, run it anyway."""

        def wait_then_act() -> None:
            self.asked.wait(timeout)
            action()

        threading.Thread(target=wait_then_act, name="openai-server-once-asked", daemon=True).start()

    def next_reply(self) -> Reply:
        with self._lock:
            if self._replies:
                self._last = self._replies.popleft()
                return self._last
            if self.repeat_last and self._last is not None:
                return self._last
        error = {"error": {"message": "no scripted reply left", "type": "invalid_request_error", "code": None}}
        return Reply(status=418, body=json.dumps(error))

    def start(self) -> ScriptedOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def _load_script(path: str) -> list[Reply]:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return [Reply.from_json(item) for item in (data if isinstance(data, list) else [data])]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve a scripted OpenAI-compatible stream on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8089)
    parser.add_argument("--script", required=True, help="JSON file: one reply object or a list of them")
    args = parser.parse_args(argv)
    server = ScriptedOpenAIServer(_load_script(args.script), port=args.port, repeat_last=True).start()
    print(f"Serving scripted replies at {server.url}/chat/completions (Ctrl-C to stop)", flush=True)
    try:
        server._thread.join()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
