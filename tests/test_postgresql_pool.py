"""config.postgresql_pool: the pool checks a connection it hands out by its socket, and makes the
round trip only when the socket shows something: a connection the server closed is still replaced."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection
from psycopg_pool import ConnectionPool

from config.postgresql_pool.base import check_quietly

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's pool (SQLite has config.sqlite_pool)"),
]


@pytest.fixture
def round_trips(monkeypatch):
    """The checks that made psycopg_pool's round trip."""
    made = []
    real = ConnectionPool.check_connection

    def counted(conn):
        made.append(conn)
        real(conn)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))
    return made


def connect() -> psycopg.Connection:
    """A connection of its own to the test database, outside Django and its pool."""
    params = connection.get_connection_params()
    params.pop("context", None)  # (Django's adapters: not needed here)
    return psycopg.connect(**params, autocommit=True)


@pytest.fixture
def conn():
    with connect() as c:
        yield c


def terminate(pid: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])


def test_the_pool_is_given_the_quiet_check():
    assert connection.pool._check is check_quietly


def test_a_quiet_live_connection_passes_without_a_round_trip(conn, round_trips):
    conn.execute("SELECT 1").fetchone()
    check_quietly(conn)
    assert round_trips == []


def test_a_connection_the_server_closed_is_refused(conn, round_trips):
    terminate(conn.info.backend_pid)
    deadline = time.monotonic() + 5  # pg_terminate_backend only signals the backend
    while time.monotonic() < deadline:
        try:
            check_quietly(conn)
        except psycopg.OperationalError:
            break
        time.sleep(0.02)
    else:
        pytest.fail("a connection whose backend was terminated passed the check")
    assert round_trips == [conn]  # the socket showed the end: the round trip found it dead
    with pytest.raises(psycopg.OperationalError):
        check_quietly(conn)  # now closed: refused without asking anyone


def test_a_connection_that_is_not_idle_is_left_to_the_pools_own_check(conn, round_trips):
    conn.autocommit = False
    conn.execute("SELECT 1")  # a transaction open (the pool rolls back what it is given back: never so)
    with pytest.raises(psycopg.Error):  # the pool's own check refuses it, and the pool drops it
        check_quietly(conn)
    assert round_trips == [conn]


def test_the_application_gets_a_live_connection_after_the_pooled_ones_were_killed():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    connection.close()  # back to the pool, idle
    with connect() as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        deadline = time.monotonic() + 5
        while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
            assert time.monotonic() < deadline, "the backend did not go"
            time.sleep(0.02)
    with connection.cursor() as cursor:  # the pool's check finds the dead one and hands out another
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid
