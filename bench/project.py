"""Every name of the project's own code that bench code imports, in one place.

The servers are measured over HTTP; only the helpers that make chats (`bench.setup_db`) and the
in-process measurements (`bench.engine`, `bench.queries`) reach into the code. Each runs inside
one tree, the old or the new, whose modules may have moved: a name is looked up where either tree
keeps it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any


def _first(name: str, *modules: str) -> Any:
    for module in modules:
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        if hasattr(found, name):
            return getattr(found, name)
    raise ImportError(f"{name} is in none of {', '.join(modules)}")


def editor_scopes() -> list[str]:
    """The scopes an editor's seat allows: a full grant for a bench user."""
    from blog.models import Seat

    return sorted(_first("ROLE_SCOPES", "blog.access", "blog.grants", "blog.grant")[Seat.EDITOR])


def owner_scopes() -> list[str]:
    from blog.models import Seat

    return sorted(_first("ROLE_SCOPES", "blog.access", "blog.grants", "blog.grant")[Seat.OWNER])


def start_session(user: Any, blog: Any) -> Any:
    """A new chat of `user` on `blog`, as the chat page opens one."""
    return _first("start_session", "blog.chat")(user, blog)


def use_fake_script(path: str) -> None:
    """Point the fake backend at the script file `path` (a setting read at call time; a tree that
    caches its backend is told to forget it)."""
    from django.conf import settings

    settings.AGENT_BACKEND, settings.AGENT_FAKE_SCRIPT = "fake", path
    try:
        reset = _first("reset_backends", "agent.backends")
    except ImportError:
        return
    reset()


def engine_loop() -> Callable[[Any], Iterator[tuple[str, Any]]]:
    """The engine's loop: called with a chat session, it runs one model turn and yields
    (event name, payload)."""
    return _first("run_agent", "agent.loop")


def sse_encoder() -> Callable[..., bytes]:
    """The API's SSE encoder of one event, `(name, payload, event_id) -> bytes` (CONTRACT §4)."""
    return _first("encode_json", "agent.sse")
