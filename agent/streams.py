"""Open streams per user, in this process: past AGENT_MAX_STREAMS_PER_USER the oldest is closed.

A stream costs its worker a socket, a follower and memory for as long as it is open, so one user
cannot hold hundreds. The oldest is closed calmly: it sends the comment `: superseded` (and `end`
in the HTML flavour, so the page stops listening), then closes. Its turn goes on; opening its
`stream_url` again (with `Last-Event-ID`) follows it again.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings

SUPERSEDED_BYTES = b": superseded\n\n"


class Ticket:
    """One open stream: the follower waits on `waiter`, which closing it sets to wake it at once."""

    def __init__(self) -> None:
        self.superseded = False
        self.waiter = threading.Event()

    def supersede(self) -> None:
        self.superseded = True
        self.waiter.set()


_open: dict[Any, deque[Ticket]] = {}
_lock = threading.Lock()


@contextmanager
def opened(user_id: Any) -> Iterator[Ticket]:
    """Hold a place among the user's open streams for the body of the `with`; closes their oldest if full."""
    ticket = Ticket()
    limit = getattr(settings, "AGENT_MAX_STREAMS_PER_USER", 8)
    with _lock:
        queue = _open.setdefault(user_id, deque())
        while limit and len(queue) >= limit:
            queue.popleft().supersede()
        queue.append(ticket)
    try:
        yield ticket
    finally:
        with _lock:
            queue = _open.get(user_id)
            if queue is not None:
                if ticket in queue:
                    queue.remove(ticket)
                if not queue:
                    del _open[user_id]


def open_count(user_id: Any) -> int:
    """How many streams the user holds open in this process."""
    return len(_open.get(user_id, ()))
