"""config.sqlite_pool: a closed SQLite connection is kept open for the next holder, safely."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from config import sqlite_pool

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the pool is SQLite's (PostgreSQL uses psycopg's)"),
]


def name():
    return connection.settings_dict["NAME"]


@pytest.fixture(autouse=True)
def _empty_pool():
    connection.close()
    sqlite_pool.base.discard()
    yield
    sqlite_pool.base.discard()


def test_a_closed_connection_is_reused_by_the_next_connect():
    connection.ensure_connection()
    raw = connection.connection
    connection.close()
    assert connection.connection is None
    assert sqlite_pool.base.idle_count(name()) == 1

    connection.ensure_connection()
    assert connection.connection is raw
    assert sqlite_pool.base.idle_count(name()) == 0
    assert get_user_model().objects.count() == 0  # and it works


def test_another_thread_gets_the_connection_this_one_gave_back():
    connection.ensure_connection()
    raw = connection.connection
    connection.close()
    seen = {}

    def other():
        from django.db import connection as theirs

        theirs.ensure_connection()
        seen["raw"] = theirs.connection
        seen["users"] = get_user_model().objects.count()
        theirs.close()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == {"raw": raw, "users": 0}
    assert sqlite_pool.base.idle_count(name()) == 1


def test_an_uncommitted_write_is_rolled_back_before_the_connection_is_pooled():
    connection.set_autocommit(False)
    get_user_model().objects.create_user("ghost")
    assert connection.connection.in_transaction
    connection.close()

    connection.ensure_connection()
    assert not connection.connection.in_transaction
    assert not get_user_model().objects.filter(username="ghost").exists()


def test_a_connection_closed_inside_an_atomic_block_is_really_closed():
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            get_user_model().objects.create_user("inside")
            raw = connection.connection
            connection.close()
            raise RuntimeError("leave the block")
    assert sqlite_pool.base.idle_count(name()) == 0
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        raw.execute("SELECT 1")  # closed for good
    assert not get_user_model().objects.filter(username="inside").exists()


def test_a_connection_after_a_database_error_is_not_pooled():
    from django.db import OperationalError

    with pytest.raises(OperationalError):
        with connection.cursor() as cur:
            cur.execute("SELECT * FROM no_such_table")
    connection.close()
    assert sqlite_pool.base.idle_count(name()) == 0


def test_an_integrity_error_leaves_the_connection_fit_for_the_pool():
    from django.db import IntegrityError

    get_user_model().objects.create_user("twin")
    with pytest.raises(IntegrityError):
        get_user_model().objects.create_user("twin")
    connection.close()
    assert sqlite_pool.base.idle_count(name()) == 1


def test_foreign_keys_are_enforced_again_for_the_next_holder():
    connection.ensure_connection()
    connection.disable_constraint_checking()
    connection.close()

    connection.ensure_connection()
    with connection.cursor() as cur:
        cur.execute("PRAGMA foreign_keys")
        assert cur.fetchone()[0] == 1


def test_taking_a_connection_sets_no_pragma_that_is_already_set():
    """Setting a flag PRAGMA, even to the value it has, expires every statement the connection has
    compiled (SQLite's OP_Expire): each would be compiled again on its next run, at every take."""
    connection.ensure_connection()
    raw = connection.connection
    connection.close()
    ran = []
    raw.set_trace_callback(ran.append)
    try:
        connection.ensure_connection()
        taking = list(ran)
        connection.disable_constraint_checking()
        connection.close()
        ran.clear()
        connection.ensure_connection()
    finally:
        raw.set_trace_callback(None)
    assert connection.connection is raw
    assert not [sql for sql in taking if "=" in sql and "PRAGMA" in sql.upper()]  # only read, never set
    assert "PRAGMA foreign_keys = ON" in ran  # after a holder turned them off: set again


def test_the_pool_keeps_at_most_max_idle_connections():
    holders = []

    def hold(ready, release):
        from django.db import connection as theirs

        theirs.ensure_connection()
        holders.append(theirs.connection)
        ready.set()
        release.wait()
        theirs.close()

    release = threading.Event()
    threads = []
    for _ in range(sqlite_pool.base.MAX_IDLE + 3):
        ready = threading.Event()
        t = threading.Thread(target=hold, args=(ready, release))
        t.start()
        ready.wait()
        threads.append(t)
    release.set()
    for t in threads:
        t.join()
    assert len({id(c) for c in holders}) == sqlite_pool.base.MAX_IDLE + 3
    assert sqlite_pool.base.idle_count(name()) == sqlite_pool.base.MAX_IDLE


def test_a_forked_child_opens_its_own_connection_and_leaves_the_parents_pool_alone():
    import os

    connection.ensure_connection()
    parent_raw = id(connection.connection)
    connection.close()
    assert sqlite_pool.base.idle_count(name()) == 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its pool starts empty, whatever the parent's held at the fork
        try:
            connection.ensure_connection()
            fresh = id(connection.connection) != parent_raw and get_user_model().objects.count() == 0
            os.write(write, b"ok" if fresh else b"shared")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 16)
    os.waitpid(pid, 0)
    assert answer == b"ok"
    assert sqlite_pool.base.idle_count(name()) == 1


def test_begin_runs_on_the_drivers_connection_unless_the_queries_are_watched(monkeypatch):
    from django.db.backends.sqlite3.base import SQLiteCursorWrapper
    from django.test.utils import CaptureQueriesContext

    through_django = []
    execute = SQLiteCursorWrapper.execute

    def recording(self, query, params=None):
        through_django.append(query)
        return execute(self, query, params)

    monkeypatch.setattr(SQLiteCursorWrapper, "execute", recording)
    connection.ensure_connection()
    ran = []
    connection.connection.set_trace_callback(ran.append)
    try:
        with transaction.atomic():
            get_user_model().objects.create_user("begun")
        assert "BEGIN IMMEDIATE" in ran and "BEGIN IMMEDIATE" not in through_django
        with CaptureQueriesContext(connection) as ctx:
            with transaction.atomic():
                get_user_model().objects.create_user("watched")
    finally:
        connection.connection.set_trace_callback(None)
    assert "BEGIN IMMEDIATE" in through_django
    assert ctx.captured_queries[0]["sql"] == "BEGIN IMMEDIATE"
    assert get_user_model().objects.filter(username__in=["begun", "watched"]).count() == 2
