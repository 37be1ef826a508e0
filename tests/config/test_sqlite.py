"""SQLite through Django's own backend: WAL, a busy timeout, and writes that take the lock at BEGIN."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


LEAKY_TEST = """
import threading

import pytest
from django.contrib.auth.models import User


@pytest.mark.django_db(transaction=True)
def test_a_thread_keeps_its_connection():
    opened = threading.Event()

    def work():
        User.objects.count()
        opened.set()
        threading.Event().wait()  # never closes its connection (a daemon thread, ended with the run)

    threading.Thread(target=work, daemon=True).start()
    assert opened.wait(30)
"""


# The suite's end-of-run hook, as tests/conftest.py gives it to every run (this one runs outside tests/).
SUITE_HOOKS = """
from tests import conftest as suite


def pytest_unconfigure(config):
    if hasattr(suite, "pytest_unconfigure"):
        suite.pytest_unconfigure(config)
"""


def test_a_run_leaves_no_wal_file_behind(tmp_path):
    """A connection still open in a thread at the end of a run used to leave `<db>-wal` and `<db>-shm`."""
    (tmp_path / "test_leaky.py").write_text(LEAKY_TEST)
    (tmp_path / "conftest.py").write_text(SUITE_HOOKS)
    database = tmp_path / "run.sqlite3"
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "TEST_SQLITE_NAME": str(database), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    env.pop("DATABASE_URL", None)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-c",
            str(root / "pyproject.toml"),
            "--rootdir",
            str(root),
            str(tmp_path),
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("run.sqlite3")) == []
