"""What the process runs under."""

from __future__ import annotations

import time
from typing import Any

_patched = False  # once patched, a process stays patched


def gevent_patched() -> bool:
    """True under gunicorn's gevent worker (sockets monkey-patched), where greenlets are the unit of work.

    Asked on every wait of every stream: after the first True it answers without looking again.
    """
    global _patched
    if _patched:
        return True
    try:
        from gevent import monkey
    except ImportError:
        return False
    _patched = monkey.is_module_patched("socket")
    return _patched


def off_the_loop(fn: Any, *args: Any) -> Any:
    """`fn(*args)` in gevent's thread pool under gevent, else inline: for work that takes long in one
    piece (decoding an image, reading a PDF, stretching a password), so it never stalls the worker's
    other streams outright (Pillow and hashlib work without the GIL; pure-Python work shares it).

    What `fn` raises is raised here, in the caller, as if it ran inline: the pool never sees it, so an
    expected refusal (an upload that is not an image) prints no traceback of the pool to stderr.

    Inline while a SQLite transaction is open on this thread: SQLite's transactions hold the database's
    write lock from their start (IMMEDIATE), and a greenlet of this worker that wrote while the holder
    waited on the pool would wait in SQLite's busy handler, which sleeps without yielding, so the holder
    could never resume and the whole worker would stall until the busy timeout.
    """
    if gevent_patched() and not holds_sqlite_write_lock():
        import gevent

        value, error = gevent.get_hub().threadpool.apply(outcome_of, (fn, args))
        if error is not None:
            raise error
        return value
    return fn(*args)


def let_others_run() -> None:
    """Under gevent, let the worker's other greenlets run a moment (a no-op without gevent): between the
    pieces of long work done in one request, an export's posts or an import's, so it never holds the
    worker throughout.

    Not while a SQLite transaction is open on this thread: it holds the database's write lock, and a
    greenlet of this worker that wrote meanwhile would wait in SQLite's busy handler, which sleeps without
    yielding, so this one could never resume to release the lock (as `off_the_loop`, above).
    """
    if not holds_sqlite_write_lock():
        time.sleep(0)


def timed(fn: Any, *args: Any) -> tuple[Any, float]:
    """`fn(*args)` and the CPU seconds it took in the thread that ran it: for work handed to `off_the_loop`,
    whose CPU the caller's own clock (`time.thread_time`) never sees."""
    start = time.thread_time()
    value = fn(*args)
    return value, time.thread_time() - start


def outcome_of(fn: Any, args: tuple[Any, ...]) -> tuple[Any, BaseException | None]:
    """(value, None) or (None, what `fn(*args)` raised, its traceback kept on it)."""
    try:
        return fn(*args), None
    except Exception as exc:
        return None, exc


def holds_sqlite_write_lock() -> bool:
    """Whether this thread has a SQLite transaction open (which holds the database's write lock)."""
    from django.db import connections

    return any(c.vendor == "sqlite" and c.in_atomic_block for c in connections.all())
