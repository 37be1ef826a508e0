"""A loopback S3 stand-in: PUT, GET, HEAD and DELETE of objects in memory, path-style addressing.

Enough of the S3 REST API for django-storages (boto3) to store, read, size, check and delete
objects through a real HTTP connection, with no patched SDK. Requests are recorded (method, path)
so a test can see what the storage really did. Signatures are not checked.

    with S3StandIn() as s3:
        ... endpoint_url=s3.url, bucket "media" ...
        s3.objects  # {"media/agent/...": b"..."}
"""

from __future__ import annotations

import email.utils
import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

NOT_FOUND = b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>Not found</Message></Error>'


def decode_aws_chunked(raw: bytes) -> bytes:
    """The payload of an `aws-chunked` body: `<hex size>[;chunk-signature=...]\\r\\n<data>\\r\\n` ... `0`."""
    out, rest = b"", raw
    while rest:
        header, _, rest = rest.partition(b"\r\n")
        size = int(header.split(b";")[0], 16)
        if size == 0:
            break
        out, rest = out + rest[:size], rest[size + 2 :]
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def key(self) -> str:
        return unquote(urlsplit(self.path).path).lstrip("/")

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if "aws-chunked" in (self.headers.get("Content-Encoding") or ""):
            return decode_aws_chunked(raw)
        return raw

    def _answer(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, send_body: bool = True):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body and body:
            self.wfile.write(body)

    def _object_headers(self, data: bytes) -> dict[str, str]:
        return {
            "ETag": f'"{hashlib.md5(data).hexdigest()}"',  # noqa: S324 (S3's own ETag is an MD5)
            "Last-Modified": email.utils.formatdate(usegmt=True),
            "Content-Type": "binary/octet-stream",
            "Accept-Ranges": "bytes",
        }

    def do_PUT(self) -> None:  # noqa: N802 (http.server's naming)
        data = self._body()
        self.server.stand_in.record("PUT", self.key)
        self.server.stand_in.objects[self.key] = data
        self._answer(200, headers={"ETag": f'"{hashlib.md5(data).hexdigest()}"'})  # noqa: S324

    def do_GET(self) -> None:  # noqa: N802
        self.server.stand_in.record("GET", self.key)
        data = self.server.stand_in.objects.get(self.key)
        if data is None:
            self._answer(404, NOT_FOUND, {"Content-Type": "application/xml"})
            return
        self._answer(200, data, self._object_headers(data))

    def do_HEAD(self) -> None:  # noqa: N802
        self.server.stand_in.record("HEAD", self.key)
        data = self.server.stand_in.objects.get(self.key)
        if data is None:
            self._answer(404, send_body=False)
            return
        self.send_response(200)
        for name, value in self._object_headers(data).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()

    def do_DELETE(self) -> None:  # noqa: N802
        self.server.stand_in.record("DELETE", self.key)
        self.server.stand_in.objects.pop(self.key, None)
        self._answer(204)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        pass


class S3StandIn:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.stand_in = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def record(self, method: str, key: str) -> None:
        with self._lock:
            self.requests.append((method, key))

    def __enter__(self) -> S3StandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
