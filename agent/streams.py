"""Open streams per user, in this process: past AGENT_MAX_STREAMS_PER_USER of one kind the oldest is closed.

A stream costs its worker a socket, a follower and memory for as long as it is open, so one user
cannot hold hundreds. Each kind of stream has its own places (`kind`: an answer's stream, a
domain's live page stream), so pages left open never take the place of the answer being read. The
oldest is closed calmly: an answer's stream sends the comment `: superseded` (and `end` in the HTML
flavour, so the page stops listening), then closes. Its turn goes on; opening its `stream_url`
again (with `Last-Event-ID`) follows it again.

A stream opened with a `key` replaces the user's open stream of that kind with the same key (a page
that points its live stream elsewhere, or reconnects, names itself): the one replaced is closed at
once and its place freed then, not when a write to its gone reader fails at its next heartbeat.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings

SUPERSEDED_BYTES = b": superseded\n\n"


ANSWER = "answer"


class Ticket:
    """One open stream: the follower waits on `waiter`, which closing it sets to wake it at once;
    `on_supersede`, if given, is called too (for a stream that waits on something else)."""

    def __init__(self, on_supersede: Callable[[], None] | None = None, key: str | None = None) -> None:
        self.key = key
        self.superseded = False
        self.waiter = threading.Event()
        self.on_supersede = on_supersede

    def supersede(self) -> None:
        self.superseded = True
        self.waiter.set()
        if self.on_supersede is not None:
            self.on_supersede()


_open: dict[tuple[str, Any], deque[Ticket]] = {}
_lock = threading.Lock()


@contextmanager
def opened(
    user_id: Any, *, kind: str = ANSWER, on_supersede: Callable[[], None] | None = None, key: str | None = None
) -> Iterator[Ticket]:
    """Hold a place among the user's open streams of `kind` for the body of the `with`; closes the one
    it replaces (the same `key`), then their oldest of that kind if full."""
    ticket = Ticket(on_supersede, key)
    limit = getattr(settings, "AGENT_MAX_STREAMS_PER_USER", 8)
    where = (kind, user_id)
    with _lock:
        queue = _open.setdefault(where, deque())
        for replaced in [held for held in queue if key is not None and held.key == key]:
            queue.remove(replaced)
            replaced.supersede()
        while limit and len(queue) >= limit:
            queue.popleft().supersede()
        queue.append(ticket)
    try:
        yield ticket
    finally:
        with _lock:
            held = _open.get(where)
            if held is not None:
                if ticket in held:
                    held.remove(ticket)
                if not held:
                    del _open[where]


def open_count(user_id: Any, kind: str = ANSWER) -> int:
    """How many streams of `kind` the user holds open in this process."""
    return len(_open.get((kind, user_id), ()))
