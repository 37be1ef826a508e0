"""The physical limit: a minimal WSGI app under gunicorn's gevent worker, no Django, no database.

Same routes and bytes as the product's JSON API for one turn: `POST .../messages` answers 202 with a
`stream_url`; `GET <stream_url>` streams `BENCH_TOKENS` token events `BENCH_DELAY_MS` apart, then
`done`. Run: `gunicorn bench.bare_app:application -c config/gunicorn.conf.py`.
"""

from __future__ import annotations

import itertools
import json
import os
import time

from bench.common import TOKEN_TEXT, USAGE, sse

TOKENS = int(os.environ.get("BENCH_TOKENS", "200"))
DELAY = int(os.environ.get("BENCH_DELAY_MS", "50")) / 1000
_ids = itertools.count(1)


def application(environ, start_response):
    path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "GET")
    if method == "POST" and path.endswith("/messages"):
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        session = path.split("/")[4]
        body = json.dumps(
            {"message_id": next(_ids), "stream_url": f"/api/agent/sessions/{session}/turns/{next(_ids)}/stream"}
        ).encode()
        start_response("202 Accepted", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]
    if method == "GET" and path.endswith("/stream"):
        start_response(
            "200 OK",
            [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no")],
        )
        return _stream()
    start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return [b""]


def _stream():
    for i in range(TOKENS):
        time.sleep(DELAY)  # gevent's sleep: gunicorn.conf.py patched the stdlib
        yield sse("token", {"text": TOKEN_TEXT}, i)
    yield sse(
        "done",
        {"message_id": next(_ids), "stop_reason": "end_turn", "usage": {**USAGE, "output_tokens": TOKENS}},
        TOKENS,
    )
