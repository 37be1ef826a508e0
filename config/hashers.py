"""Password hashing that does not freeze a gevent worker."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.db import connections

from agent.runtime import gevent_patched


class GeventPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """Django's PBKDF2 hashes, unchanged; under gevent the key stretching runs on a real thread.

    PBKDF2 is ~0.5 s of CPU per login and hashlib releases the GIL while it runs, so on gevent's
    thread pool the worker's other greenlets keep streaming instead of stalling on every login.

    Except inside a transaction on SQLite (the admin's "add user" hashes inside one): it holds the
    database's write lock from its start (IMMEDIATE), and a greenlet of this worker that wrote
    meanwhile would wait for it in SQLite's busy handler, which sleeps without yielding, so the
    holder could never resume and the whole worker would stall until the busy timeout.
    """

    def encode(self, password, salt, iterations=None):
        if gevent_patched() and not _holds_sqlite_write_lock():
            import gevent

            parent = super().encode
            return gevent.get_hub().threadpool.apply(parent, (password, salt, iterations))
        return super().encode(password, salt, iterations)


def _holds_sqlite_write_lock() -> bool:
    return any(c.vendor == "sqlite" and c.in_atomic_block for c in connections.all())
