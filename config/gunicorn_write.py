"""How gunicorn puts a response's body bytes on the wire, made cheaper for many small writes.

A stream writes one small chunk per event (a token is ~60 bytes), thousands of times a second on
a busy worker. gunicorn's `Response._emit_body` (the one place body framing happens, there so it
can be replaced) frames the chunk with two joins and hands it to gevent's `sendall`, which asks
the kernel for the socket's send buffer size (a system call) on every call and then sends by
memoryview slices. This frames with one bytes format and tries one `send`: a send that leaves
bytes over (the client's buffer is full) hands the rest to `sendall`, which waits as before. The
bytes on the wire are the same. ~2 µs less per event (bench/FINDINGS.md, session 8).
"""

from __future__ import annotations

from typing import Any

from gunicorn.http import wsgi


def emit_body(response: Any, data: bytes) -> None:
    """`Response._emit_body`: `data` (bytes) as one HTTP/1.1 chunk if the response is chunked."""
    if response.chunked:
        data = b"%X\r\n%b\r\n" % (len(data), data)
    sock = response.sock
    sent = sock.send(data)
    if sent < len(data):
        sock.sendall(memoryview(data)[sent:])


def install() -> None:
    wsgi.Response._emit_body = emit_body
