"""SQLite with a small per-process pool of open connections.

Under gevent every greenlet has its own Django connection, and the product closes it after each
short burst of queries (so a waiting stream holds nothing). For SQLite, opening a connection runs
the init PRAGMAs (`journal_mode=WAL` reads the file) and re-parses the schema on first use, and a
close unmaps the WAL index: about a quarter of a busy worker's CPU went to that churn (BENCHMARKS.md).
Here a close hands the open connection back to the pool and the next connect takes it again.

Safe because a pooled connection is used by one holder at a time, SQLite is in-process (nothing to
break over a network), and a connection is only pooled outside any transaction. A connection closed
inside an atomic block, or after a database error, is really closed. The pool is per process (never
carried over a fork) and per database file; it keeps at most `MAX_IDLE` idle connections.
"""

from __future__ import annotations

import os
import threading

from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabaseWrapper

MAX_IDLE = 16

_lock = threading.Lock()
_idle: dict[tuple[int, str], list] = {}


def idle_count(name: str) -> int:
    """How many open connections to database file `name` wait in this process's pool."""
    with _lock:
        return len(_idle.get((os.getpid(), str(name)), ()))


def discard(name: str | None = None) -> None:
    """Close this process's idle connections (all of them, or those to one database file)."""
    with _lock:
        keys = [k for k in _idle if k[0] == os.getpid() and (name is None or k[1] == str(name))]
        conns = [c for k in keys for c in _idle.pop(k)]
    for conn in conns:
        conn.close()


class DatabaseWrapper(SQLiteDatabaseWrapper):
    def _pool_key(self) -> tuple[int, str] | None:
        if self.is_in_memory_db():
            return None
        return (os.getpid(), str(self.settings_dict["NAME"]))

    def get_new_connection(self, conn_params):
        key = self._pool_key()
        if key is not None:
            with _lock:
                idle = _idle.get(key)
                conn = idle.pop() if idle else None
            if conn is not None:
                # Undo what a previous holder may have changed (disable_constraint_checking). Only when
                # it did: setting a flag PRAGMA, even to its current value, expires every statement the
                # connection has prepared, and each would then be compiled again on its next run.
                if not conn.execute("PRAGMA foreign_keys").fetchone()[0]:
                    conn.execute("PRAGMA foreign_keys = ON")
                return conn
        return super().get_new_connection(conn_params)

    def _close(self):
        conn = self.connection
        key = self._pool_key()
        if conn is None or key is None or self.in_atomic_block or self.errors_occurred:
            return super()._close()
        with self.wrap_database_errors:
            if conn.in_transaction:
                conn.rollback()
        with _lock:
            idle = _idle.setdefault(key, [])
            if len(idle) < MAX_IDLE:
                idle.append(conn)
                return None
        return super()._close()
