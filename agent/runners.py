"""Where database work runs: the database parts of background turns (`agent.turns`) and, under the
served app, each request's Django handling (`config/wsgi.py`). Runners are greenlets (threads without
gevent) that each run one job at a time and, between jobs, wait a while for the next one.

Django gives every greenlet a database connection of its own. On SQLite opening one is the dearest
thing a request or a turn's start does (SQLite reads and parses the whole schema on each new
connection), so a runner keeps its connection open from one job to the next. A runner waits
`IDLE_SECONDS` for work and then ends, closing its connections; at most `MAX_IDLE` wait at once
(enough that a burst's runners are taken again rather than opened anew; an idle worker's connections
go after `IDLE_SECONDS`). A turn waiting on its model holds no runner, so the runners a worker needs
follow the database work it does at once, not the turns it streams. On PostgreSQL each job gives its
connection back to Django's pool as it ends (`agent.transcript.release_connection`), so a waiting
runner keeps none.

Every job runs alone in its runner, in a fresh `contextvars.Context` (or the one it brings:
`agent.turns`); nothing of one job is left for the next but the open connection (a request's
handling checks it as it ends, `config/wsgi.py`; a turn's part that fails closes it). `call` runs
work in a runner and waits for its result.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from django.db import connections

from agent import logcontext
from agent.runtime import gevent_patched

logger = logcontext.get_logger("agent.runners")

IDLE_SECONDS = 30.0
MAX_IDLE = 256

_idle: list[Runner] = []  # waiting for a turn, the most recently used last
_lock = threading.Lock()


class Runner:
    """One greenlet (or thread) and the job it is given next."""

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
            contextvars.Context().run(function, *args)  # (nothing of one job's context is left for the next)
        except Exception:  # (`call` hands its caller what its function raises: this is a bug's last stop)
            logger.exception("a job failed in a runner")
            connections.close_all()  # whatever state it left them in

    def _next(self) -> tuple[Callable[..., Any], tuple[Any, ...]] | None:
        """Wait to be given the next job; None: time to end (idle too long, or enough others wait)."""
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
            self.given.wait()  # taken just as it timed out: its job is being handed over
        job, self.job = self.job, None
        return job


def submit(function: Callable[..., Any], *args: Any) -> None:
    """Run `function(*args)` in a runner: one that waits (the most recently used), else a new one, a
    greenlet under gevent, else a thread."""
    with _lock:
        runner = _idle.pop() if _idle else None
    if runner is not None:
        runner.job = (function, args)
        runner.given.set()
        return
    # (the first job goes in through `job` too: a thread's or greenlet's own arguments would be
    # held for the runner's whole life)
    runner = Runner()
    runner.job = (function, args)
    if gevent_patched():
        import gevent

        gevent.spawn(runner.run)
    else:
        threading.Thread(target=runner.run, daemon=True).start()


def call(function: Callable[..., Any], *args: Any) -> Any:
    """Run `function(*args)` in a runner (a greenlet under gevent, else a thread) and wait for what it
    returns or raises."""
    future: Future[Any] = Future()
    submit(_settle, future, function, args)
    return future.result()


def _settle(future: Future[Any], function: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        future.set_result(function(*args))
    except BaseException as error:  # (the caller gets it, whatever it is)
        future.set_exception(error)
        if not isinstance(error, Exception):
            raise


def idle_count() -> int:
    return len(_idle)
