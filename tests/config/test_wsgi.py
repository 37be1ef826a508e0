"""The served application (`config/wsgi.py`): under gevent each request's Django handling runs in a
runner that keeps its database connection for the next request; the caller only writes the response.

These tests run the same wrapping with threads (a runner is a thread without gevent).
"""

from __future__ import annotations

import io
import json
import sys
import threading
from unittest import mock

import pytest
from django.core.wsgi import get_wsgi_application
from django.db import connection, connections
from django.http import HttpResponse, StreamingHttpResponse
from django.test import Client

from agent import runners
from config.wsgi import ClosingConnections, on_runners

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_runners")]


def environ(path: str, **headers: str) -> dict:
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "HTTP_HOST": "testserver",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        **headers,
    }


def serve(app, env) -> tuple[str, bytes]:
    status = []
    out = app(env, lambda s, h, e=None: status.append(s))
    try:
        return status[0], b"".join(out)
    finally:
        out.close()


def test_a_request_is_handled_by_djangos_app_in_a_runner(user, chat):
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    status, body = serve(
        on_runners(get_wsgi_application()), environ(f"/api/agent/sessions/{chat.pk}", HTTP_COOKIE=cookie)
    )
    assert status.startswith("200")
    assert json.loads(body)["id"] == str(chat.pk)
    status, _ = serve(on_runners(get_wsgi_application()), environ(f"/api/agent/sessions/{chat.pk}"))
    assert status.startswith("401")  # (no cookie: nothing of the last request was left in the runner)


def test_the_next_request_reuses_the_runners_connection_where_connections_persist():
    seen = []

    def app(env, start_response):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        seen.append((threading.get_ident(), connection.connection))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return HttpResponse(b"ok")

    served = on_runners(app)
    for _ in range(2):
        assert serve(served, environ("/")) == ("200 OK", b"ok")
        runners.call(lambda: None)  # (the runner is idle again)
    (first_thread, first_db), (second_thread, second_db) = seen
    assert first_thread == second_thread != threading.get_ident()
    kept = runners.call(lambda: connections["default"].connection)
    if connection.settings_dict["CONN_MAX_AGE"] == 0:  # PostgreSQL with Django's pool: back to the pool
        assert kept is None
    else:  # SQLite: persistent, kept by the runner
        assert second_db is first_db and kept is first_db


def test_a_streaming_response_is_written_by_the_caller_which_closes_what_it_opened():
    writers = []

    def content():
        with connection.cursor() as cursor:  # (as a chat's stream may read the transcript)
            cursor.execute("SELECT 1")
        writers.append(threading.get_ident())
        yield b"event: done\n\n"

    def app(env, start_response):
        response = StreamingHttpResponse(content())
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        return response

    with mock.patch.object(connections, "close_all", wraps=connections.close_all) as close_all:
        out = on_runners(app)(environ("/"), lambda s, h, e=None: None)
        assert isinstance(out, ClosingConnections)
        assert b"".join(out) == b"event: done\n\n"
        assert writers == [threading.get_ident()]
        close_all.assert_not_called()
        out.close()
        close_all.assert_called_once_with()


def test_what_the_app_raises_reaches_the_caller():
    def app(env, start_response):
        raise RuntimeError("broken app")

    with pytest.raises(RuntimeError, match="broken app"):
        on_runners(app)(environ("/"), lambda s, h, e=None: None)
