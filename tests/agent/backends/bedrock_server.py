"""A loopback stand-in for Bedrock Runtime's ConverseStream, speaking the real binary event stream.

boto3 talks to it like to AWS (SigV4-signed `POST /model/<id>/converse-stream`); the server does not
check signatures. Each request is recorded (path, model id, headers, JSON body) and answered with the
next response of its script; once the script is used up, the last response repeats.

A script is JSON: `{"responses": [response, ...]}` (or just the list). A response is either

* an HTTP error: `{"status": 429, "error_type": "ThrottlingException", "message": "Too many tokens"}`
  → that status, header `x-amzn-ErrorType: ThrottlingException:http://internal.amazon.com/coral/...`,
  JSON body `{"message": ...}`; optional `"headers": {...}` (e.g. `{"Retry-After": "3"}`);
* a stream: `{"events": [item, ...]}` → `200`, `Content-Type: application/vnd.amazon.eventstream`,
  chunked transfer encoding. Items:
  - an event as boto3 yields it, e.g. `{"contentBlockDelta": {"delta": {"text": "Hi"}, "contentBlockIndex": 0}}`
    → one frame (`:message-type` event, `:event-type` the key) whose payload also carries a `"p"`
    padding field, as the real service's do (botocore drops it);
  - `{"exception": "throttlingException", "message": "...", ...}` → an exception frame
    (`:message-type` exception, `:exception-type`), payload the other keys;
  - `{"sleep": 0.5}` → pause; `{"cut": true}` → drop the connection mid-response;
  - `{"raw_b64": "..."}` → these bytes as they are (corrupt frames and the like).
  Options: `"split": [byte offsets]` cuts the body into pieces written (and flushed) separately,
  `"chunk_size": n` does the same every n bytes, `"delay": s` pauses between pieces.

By hand:

    python -m tests.agent.backends.bedrock_server --port 8090 --script script.json
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME=http://127.0.0.1:8090 AWS_ACCESS_KEY_ID=x \\
        AWS_SECRET_ACCESS_KEY=x AWS_REGION=us-east-1 AGENT_BACKEND=bedrock make run

Without `--script` it answers every request with a short text stream.
"""

from __future__ import annotations

import argparse
import base64
import json
import socket
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

PADDING = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123"
ERROR_TYPE_SUFFIX = ":http://internal.amazon.com/coral/com.amazon.bedrock/"


# --------------------------------------------------------------------------- frames


def encode_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One `application/vnd.amazon.eventstream` message: prelude, CRC, string headers, payload, CRC."""
    header_bytes = b"".join(
        bytes([len(name.encode())]) + name.encode() + b"\x07" + struct.pack(">H", len(value.encode())) + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(header_bytes) + len(payload) + 4
    prelude = struct.pack(">II", total, len(header_bytes))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + header_bytes + payload
    return message + struct.pack(">I", zlib.crc32(message))


def event_frame(event_type: str, body: dict[str, Any], *, padding: str = PADDING) -> bytes:
    payload = json.dumps({**body, "p": padding} if padding else body).encode()
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return encode_frame(headers, payload)


def exception_frame(exception_type: str, body: dict[str, Any]) -> bytes:
    headers = {":exception-type": exception_type, ":content-type": "application/json", ":message-type": "exception"}
    return encode_frame(headers, json.dumps(body).encode())


def item_bytes(item: dict[str, Any]) -> bytes:
    """The bytes of one non-control script item (an event or an exception)."""
    if "exception" in item:
        return exception_frame(item["exception"], {k: v for k, v in item.items() if k != "exception"})
    if "raw_b64" in item:
        return base64.b64decode(item["raw_b64"])
    ((event_type, body),) = item.items()
    return event_frame(event_type, body)


def encode_events(items: list[dict[str, Any]]) -> bytes:
    """All frames of a list of events and exceptions, concatenated (control items skipped)."""
    return b"".join(item_bytes(item) for item in items if not ({"sleep", "cut"} & item.keys()))


# --------------------------------------------------------------------------- write plan


def _segments(items: list[dict[str, Any]]) -> Iterator[tuple[str, Any]]:
    """Control actions, and runs of consecutive frames joined into one bytes blob."""
    pending: list[bytes] = []  # (joined once: `+=` on bytes made a 4,000-frame stream take seconds)
    for item in items:
        if "sleep" in item or item.get("cut"):
            if pending:
                yield "bytes", b"".join(pending)
                pending = []
            yield ("sleep", float(item["sleep"])) if "sleep" in item else ("cut", None)
        else:
            pending.append(item_bytes(item))
    if pending:
        yield "bytes", b"".join(pending)


def plan(response: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """`("bytes", b)`, `("sleep", s)`, `("cut", None)` actions; each bytes action is one written chunk.

    Frames between two control items go out as one chunk unless the response's split points
    (offsets into the whole body) cut them, so several frames may share a chunk, as on the wire.
    """
    cuts = _split_points(response)
    delay = float(response.get("delay") or 0)
    offset = 0
    for kind, value in _segments(response.get("events") or []):
        if kind != "bytes":
            yield kind, value
            continue
        start = 0
        for cut in (c - offset for c in cuts if offset < c < offset + len(value)):
            yield "bytes", value[start:cut]
            if delay:
                yield "sleep", delay
            start = cut
        yield "bytes", value[start:]
        offset += len(value)


def _split_points(response: dict[str, Any]) -> list[int]:
    points = set(response.get("split") or [])
    size = int(response.get("chunk_size") or 0)
    if size > 0:
        total = len(encode_events(response.get("events") or []))
        points.update(range(size, total, size))
    return sorted(points)


# --------------------------------------------------------------------------- server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        parts = path.split("/")
        if len(parts) != 4 or parts[1] != "model" or parts[3] != "converse-stream":
            self._error({"status": 404, "error_type": "UnknownOperationException", "message": "Unknown operation."})
            return
        response = self.server.stub.record(path, unquote(parts[2]), dict(self.headers.items()), raw)
        try:
            if int(response.get("status", 200)) != 200:
                self._error(response)
            else:
                self._stream(response)
        except OSError:
            self.close_connection = True  # the client went away (timeouts, cuts): nothing to do

    def _error(self, response: dict[str, Any]) -> None:
        body = json.dumps({"message": response.get("message", "")}).encode()
        self.send_response(int(response["status"]))
        self.send_header("Content-Type", "application/json")
        self.send_header("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
        self.send_header("x-amzn-ErrorType", response.get("error_type", "InternalServerException") + ERROR_TYPE_SUFFIX)
        for name, value in (response.get("headers") or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, response: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
        self.end_headers()
        self.wfile.flush()
        for kind, value in plan(response):
            if kind == "sleep":
                time.sleep(value)
            elif kind == "cut":
                self._cut()
                return
            elif value:
                self.wfile.write(f"{len(value):x}\r\n".encode() + value + b"\r\n")
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _cut(self) -> None:
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 256
    stub: BedrockStubServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out or hang up are part of the script, not news


class BedrockStubServer:
    """`with BedrockStubServer([...]) as server:` → boto3 `endpoint_url=server.url`."""

    def __init__(self, responses: list[dict[str, Any]] | None = None, *, host: str = "127.0.0.1", port: int = 0):
        self.responses: list[dict[str, Any]] = list(responses or [])
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._served = 0
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.stub = self
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, *responses: dict[str, Any]) -> None:
        with self._lock:
            self.responses.extend(responses)

    def record(self, path: str, model: str, headers: dict[str, str], raw: bytes) -> dict[str, Any]:
        """Keep the request; return the response scripted for it."""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        with self._lock:
            self.requests.append({"path": path, "model": model, "headers": headers, "body": body})
            if not self.responses:
                return DEFAULT_RESPONSE
            response = self.responses[min(self._served, len(self.responses) - 1)]
            self._served += 1
            return response

    def start(self) -> BedrockStubServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="bedrock-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> BedrockStubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


DEFAULT_RESPONSE: dict[str, Any] = {
    "events": [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": "Hello from the "}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"text": "Bedrock stub."}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
        {"metadata": {"usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}, "metrics": {"latencyMs": 1}}},
    ]
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Loopback Bedrock ConverseStream server (see module docstring).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--script", help='JSON file: {"responses": [...]} or a list of responses')
    args = parser.parse_args(argv)
    responses: list[dict[str, Any]] = []
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            loaded = json.load(fh)
        responses = loaded["responses"] if isinstance(loaded, dict) else loaded
    server = BedrockStubServer(responses, host=args.host, port=args.port)
    print(f"Bedrock stub listening on {server.url} ({len(responses)} scripted responses)", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


if __name__ == "__main__":
    main()
