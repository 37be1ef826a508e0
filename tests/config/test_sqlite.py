"""SQLite through Django's own backend: WAL, a busy timeout, and writes that take the lock at BEGIN."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's settings"),
]


def pragma(name: str):
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA {name}")
        return cursor.fetchone()[0]


def test_djangos_backend_with_wal_and_a_busy_timeout():
    assert connection.settings_dict["ENGINE"] == "django.db.backends.sqlite3"
    assert pragma("journal_mode") == "wal"
    assert pragma("synchronous") == 1  # NORMAL
    assert pragma("busy_timeout") == 20_000


def test_a_transaction_takes_the_write_lock_at_begin():
    with CaptureQueriesContext(connection) as ctx:
        with transaction.atomic():
            get_user_model().objects.create_user("begun")
    assert ctx.captured_queries[0]["sql"] == "BEGIN IMMEDIATE"
