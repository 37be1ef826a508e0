"""A per-stream watchdog: when the next event is late, it cuts the connection under a blocked read.

An HTTP client has one read timeout per request, but a model stream has two limits (the first event
may take long, later gaps must be short) and a server can go silent between them. The reader calls
`expect(seconds)` after each event; a companion thread (a greenlet under gevent) sleeps until the
deadline and re-checks it (a later event moved it on, and the reader wakes the thread only when a
deadline moves earlier), and when it has passed calls `cut()`, which shuts the socket down: the blocked read returns at once and the adapter
reports `fired` (the limit that was missed) as its timeout.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any


class Watchdog:
    def __init__(self, cut: Callable[[], None], *, clock: Callable[[], float] = time.monotonic) -> None:
        self._cut = cut
        self._clock = clock
        self._deadline = 0.0
        self._limit = 0.0
        self._finished = threading.Event()
        self._wake = threading.Event()  # the deadline moved earlier, or the stream is over
        self._thread: threading.Thread | None = None
        #: The limit (seconds) that was missed, once the watchdog has cut the connection.
        self.fired: float | None = None

    def expect(self, within: float, *, limit: float | None = None) -> None:
        """The next event is due within `within` seconds (`limit`: the limit to report, if other)."""
        deadline = self._clock() + within
        earlier = deadline < self._deadline
        self._limit = within if limit is None else limit
        self._deadline = deadline
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="agent-stream-watchdog", daemon=True)
            self._thread.start()
        elif earlier:  # (from the first event's long limit to the short one between events: once)
            self._wake.set()

    def stop(self) -> None:
        self._finished.set()
        self._wake.set()

    def _watch(self) -> None:
        while not self._finished.is_set():
            remaining = self._deadline - self._clock()
            if remaining <= 0:
                break
            self._wake.wait(remaining)
            self._wake.clear()
        if self._finished.is_set():
            return
        self.fired = self._limit
        try:
            self._cut()
        except OSError:
            pass  # already closed: the reader is done with it


def each_expecting(events: Iterator[Any], watchdog: Watchdog, between: float) -> Iterator[Any]:
    """Pass SSE events on; each data event (not a keep-alive comment) gives the next `between` seconds."""
    for item in events:
        if not item.comment:
            watchdog.expect(between)
        yield item


def cut_response(response: Any) -> None:
    """Shut an httpx response's socket down, so that a read blocked on it returns (the watchdog's cut).
    httpx documents the `network_stream` response extension and its `get_extra_info("socket")`.

    Not once the response is closed: its body was read to the end, and its connection may be back in
    the client's pool, carrying another call's request."""
    if response.is_closed:
        return
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        sock.shutdown(socket.SHUT_RDWR)
    else:
        response.close()
