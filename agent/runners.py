"""Where background turns run: greenlets (threads without gevent) that each run one turn at a time
and, between turns, wait a while for the next one.

Django gives every greenlet a database connection of its own. On SQLite opening one is most of what
starting a turn costs the worker (SQLite reads and parses the whole schema on each new connection),
so a runner that has just finished a turn keeps its connection open and takes the next turn with it.
A runner waits `IDLE_SECONDS` for work and then ends, closing its connections; at most `MAX_IDLE`
wait at once, so an idle worker holds few connections. On PostgreSQL the turn gives its connection
back to Django's pool before every wait (`agent.transcript.release_connection`), so it keeps none.

Every turn still runs alone in its runner; nothing of one turn is left for the next but the open
connection (`agent.transcript.turn_ended` checks it is usable, else closes it).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from django.db import connections

from agent.runtime import gevent_patched

logger = logging.getLogger("agent.runners")

IDLE_SECONDS = 30.0
MAX_IDLE = 64

_idle: list[Runner] = []  # waiting for a turn, the most recently used last
_lock = threading.Lock()


class Runner:
    """One greenlet (or thread) and the turn it is given next."""

    def __init__(self) -> None:
        self.job: tuple[Callable[..., Any], tuple[Any, ...]] | None = None
        self.given = threading.Event()
        self.ended = threading.Event()  # set once it has closed its connections and ends

    def run(self) -> None:
        try:
            job, self.job = self.job, None
            while job is not None:
                self._run_one(*job)
                job = None  # (a waiting runner holds nothing of the turn it ran)
                job = self._next()
        finally:
            connections.close_all()
            self.ended.set()

    @staticmethod
    def _run_one(function: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            function(*args)
        except Exception:  # (a turn records its own failures; this is a bug's last stop)
            logger.exception("a background turn failed")
            connections.close_all()  # whatever state it left them in

    def _next(self) -> tuple[Callable[..., Any], tuple[Any, ...]] | None:
        """Wait to be given the next turn; None: time to end (idle too long, or enough others wait)."""
        self.job = None
        self.given.clear()
        with _lock:
            if len(_idle) >= MAX_IDLE:
                return None
            _idle.append(self)
        if not self.given.wait(IDLE_SECONDS):
            with _lock:
                if self in _idle:  # nobody took it meanwhile: end
                    _idle.remove(self)
                    return None
            self.given.wait()  # taken just as it timed out: its turn is being handed over
        job, self.job = self.job, None
        return job


def submit(function: Callable[..., Any], *args: Any, greenlet: bool = True) -> None:
    """Run `function(*args)` in a runner: one that waits (the most recently used), else a new one, a
    greenlet under gevent (unless `greenlet` is False), else a thread."""
    with _lock:
        runner = _idle.pop() if _idle else None
    if runner is not None:
        runner.job = (function, args)
        runner.given.set()
        return
    # (the first turn goes in through `job` too: a thread's or greenlet's own arguments would be
    # held for the runner's whole life)
    runner = Runner()
    runner.job = (function, args)
    if greenlet and gevent_patched():
        import gevent

        gevent.spawn(runner.run)
    else:
        threading.Thread(target=runner.run, daemon=True).start()


def idle_count() -> int:
    return len(_idle)
