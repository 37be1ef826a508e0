"""What the HTTP adapters' tests share: a loopback server for each test and a backend factory.

A test module names what it tests in module attributes: `BACKEND`, the adapter's class; `KEY`, the
API key its backends send (the module checks it never shows in an error); and `SERVER`, the
loopback stand-in that speaks its provider's wire format (`ScriptedOpenAIServer` unless it says
otherwise). Every backend the factory makes is closed after the test; its retries
record their waits in `sleeps` instead of sleeping.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.agent.backends.openai_server import ScriptedOpenAIServer


@pytest.fixture
def server(request):
    srv = getattr(request.module, "SERVER", ScriptedOpenAIServer)().start()
    yield srv
    srv.stop()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def make_backend(request, server, sleeps):
    backend_class, key = request.module.BACKEND, request.module.KEY
    made: list[Any] = []

    def make(**overrides: Any):
        options = dict(base_url=server.url, api_key=key, first_event_timeout=5, event_timeout=5, retries=2)
        backend = backend_class(**{**options, **overrides}, sleep=sleeps.append)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()


@pytest.fixture
def backend(make_backend):
    return make_backend()
