"""The WSGI application that gunicorn serves (`config.wsgi:application`).

Under gevent (gunicorn's gevent worker) each request's Django handling, its middleware and view,
runs in a runner (`agent.runners`): a greenlet that outlives the request and keeps its database
connection for the next request or turn, as a thread of a threaded server does. The greenlet
gunicorn gives a client connection ends with it; a connection Django opened there would be opened
again for every client (on SQLite that parses the whole schema) and, kept, left to the garbage
collector. So gunicorn's greenlet only writes the response. A streaming response's content (a chat's
events) is still produced there, as it is sent: what it opens is closed when it ends.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, connections
from django.http import StreamingHttpResponse

from agent import runners
from agent.runtime import gevent_patched
from config import admission

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def on_runners(app: WSGIApp) -> WSGIApp:
    """`app`, each request handled in a runner and its response written by the caller's greenlet; a
    request that starts a turn is first admitted (`config.admission`)."""

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if admission.starts_turn(environ):
            admission.admit()  # (a new turn waits here while the worker is overloaded, holding no runner)
        response = runners.call(handle, app, environ, start_response)
        if isinstance(response, StreamingHttpResponse):  # (a chat's stream)
            return ClosingConnections(response)
        return response

    return application


def handle(app: WSGIApp, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Django's handling of one request, in the runner; then what Django does at a request's end.

    (Django closes obsolete connections when the response is closed, in the greenlet that writes
    it; the runner's are checked here: a connection of Django's PostgreSQL pool goes back to the
    pool, a persistent SQLite one stays open unless it is no longer usable.)
    """
    try:
        return app(environ, start_response)
    finally:
        close_old_connections()


class ClosingConnections:
    """A streaming response whose `close()` also closes the connections its content opened in the
    writing greenlet (that greenlet ends with the client connection)."""

    def __init__(self, response: StreamingHttpResponse) -> None:
        self.response = response

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.response)

    def close(self) -> None:
        try:
            self.response.close()
        finally:
            connections.close_all()


try:
    application: WSGIApp = get_wsgi_application()
except ImproperlyConfigured as e:
    # A value the settings refuse (README, "Configuration"): gunicorn says an AppImportError's sentence
    # alone and stops ("App failed to load."), where any other error came with its traceback of the import.
    from gunicorn.errors import AppImportError

    raise AppImportError(str(e)) from None
if gevent_patched():  # (gunicorn's gevent worker patches the process before it loads this module)
    application = on_runners(application)
