"""PostgreSQL with psycopg's pool, whose check of a connection it hands out costs no round trip
while the connection's socket is quiet.

With CONN_HEALTH_CHECKS on, Django gives the pool psycopg_pool's `check_connection`: an empty
query each time a connection is handed out. A turn takes one several times (its message, its
stream, its answer after the model), and each check was a round trip, costing the worker ~100 µs
of CPU under gevent (send, wait, wake, read).

A connection the server closed while it sat in the pool (a restart, `pg_terminate_backend`, an idle
timeout) shows on its socket: the server's farewell message and the end of the stream wait there
to be read. So this check first asks the socket, without waiting, whether anything is there; only
then does it make the round trip, which raises for a dead connection, and the pool replaces it (as
before: RELIABILITY.md). A live idle connection has nothing to read: no PostgreSQL message comes
unasked to a connection that listens to no channel, outside a query, but a notice or a parameter
change, and for those the round trip is made too. What no socket shows (a host gone from the
network without a word) the round trip would not find quickly either: it would wait on TCP.
"""

from __future__ import annotations

import select

import psycopg
from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabaseWrapper
from psycopg import pq
from psycopg_pool import ConnectionPool


def check_quietly(conn: psycopg.Connection) -> None:
    """The pool's `check`: return for a connection that looks alive, raise for a dead one."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the connection is closed")
    quiet = conn.pgconn.transaction_status == pq.TransactionStatus.IDLE
    if not quiet or select.select([conn.fileno()], [], [], 0)[0]:
        ConnectionPool.check_connection(conn)  # the round trip: raises if the server has gone


class DatabaseWrapper(PostgresDatabaseWrapper):
    @property
    def pool(self):
        pool = super().pool
        # Django passes psycopg_pool's own check when CONN_HEALTH_CHECKS is on (and none when off).
        if pool is not None and getattr(pool, "_check", None) is ConnectionPool.check_connection:
            pool._check = check_quietly
        return pool
