"""PostgreSQL through Django's own connection pool: sized from the settings, and a connection the
server closed while it sat in the pool is replaced before a request gets it."""

from __future__ import annotations

import os
import time

import psycopg
import pytest
from django.conf import settings
from django.db import connection

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's pool (SQLite opens its file)"),
]


def connect() -> psycopg.Connection:
    """A connection of its own to the test database, outside Django and its pool."""
    params = connection.get_connection_params()
    params.pop("context", None)  # (Django's adapters: not needed here)
    return psycopg.connect(**params, autocommit=True)


def test_djangos_pool_is_sized_from_the_settings():
    assert connection.settings_dict["ENGINE"] == "django.db.backends.postgresql"
    assert connection.settings_dict["OPTIONS"]["pool"]["max_size"] == settings.DATABASE_POOL_MAX_SIZE
    assert connection.pool is not None
    assert connection.pool.max_size == settings.DATABASE_POOL_MAX_SIZE


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


def test_each_test_process_has_a_test_database_of_its_own():
    """Runs side by side on one server (CI, other checkouts) never share, nor drop, each other's database."""
    assert connection.settings_dict["NAME"].endswith(f"_test_{os.getpid()}")
