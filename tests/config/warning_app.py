"""A WSGI app that warns as it is loaded, for the gunicorn tests: what the log says of such a warning."""

from __future__ import annotations

import warnings

warnings.warn("loading this app: something the operator should know", UserWarning, stacklevel=1)


def application(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"ok"]
