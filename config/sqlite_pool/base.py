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
from typing import Any

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


_pid = os.getpid()  # this process's, kept without a system call per connect (see `_forked`)


def _forked() -> None:
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


class DatabaseWrapper(SQLiteDatabaseWrapper):
    _key: tuple[Any, tuple[int, str] | None] = (None, None)  # (the NAME it was worked out for, the key)

    def _pool_key(self) -> tuple[int, str] | None:
        name = self.settings_dict["NAME"]
        for_name, key = self._key
        if for_name is not name or key is None or key[0] != _pid:  # (a connect and a close ask: kept)
            key = None if self.is_in_memory_db() else (_pid, str(name))
            self._key = (name, key)
        return key

    def _start_transaction_under_autocommit(self):
        """BEGIN on the driver's connection, unless the connection's queries are watched (the query
        log, execute wrappers): there through Django's cursor, so they see it, as Django runs it."""
        if self.queries_logged or self.execute_wrappers:
            return super()._start_transaction_under_autocommit()
        with self.wrap_database_errors:
            self.connection.execute("BEGIN" if self.transaction_mode is None else f"BEGIN {self.transaction_mode}")

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
