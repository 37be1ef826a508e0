"""`manage.py migrate` run by several hosts at once (README, "Deploying past one box")."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest
from django.conf import settings

from config.management.commands.migrate import LOCK_KEY
from tests.servers import ROOT, server_env


def test_two_migrate_runs_at_once_on_one_postgresql_database_both_succeed_and_the_schema_is_whole():
    # (Hosts that each migrate as they start ran it at once: one failed with `relation "agent_session"
    # already exists`, its host left down.)
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("PostgreSQL only (CI runs it there): on SQLite migrate takes no lock, one box runs it")
    name = f"{db['NAME']}_migrate_{os.getpid()}"
    server = {"host": db["HOST"], "port": db["PORT"] or 5432, "user": db["USER"], "password": db["PASSWORD"]}
    with psycopg.connect(**server, dbname="postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        url = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{server['port']}/{name}"
        env = server_env(DEBUG="1", DATABASE_URL=url)
        runs = [
            subprocess.Popen(
                [sys.executable, "manage.py", "migrate", "--noinput"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for _ in range(2)
        ]
        outputs = [run.communicate(timeout=300)[0] for run in runs]
        assert [run.returncode for run in runs] == [0, 0], outputs
        assert sum("No migrations to apply." in output for output in outputs) == 1, outputs
        check = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--check", "--noinput"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0, check.stdout + check.stderr  # every migration applied
    finally:
        with psycopg.connect(**server, dbname="postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.django_db
def test_migrate_check_answers_while_another_host_migrates():
    # (`/healthz` asks `migrate --check` while migrations are pending: that is exactly when another
    # host holds the migrate lock, and the probe waited on it for the whole migration.)
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.postgresql":
        pytest.skip("PostgreSQL only (CI runs it there): on SQLite migrate takes no lock")
    server = {"host": db["HOST"], "port": db["PORT"] or 5432, "user": db["USER"], "password": db["PASSWORD"]}
    url = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{server['port']}/{db['NAME']}"
    with psycopg.connect(**server, dbname=db["NAME"], autocommit=True) as other_host:
        other_host.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
        check = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--check", "--noinput"],
            cwd=ROOT,
            env=server_env(DEBUG="1", DATABASE_URL=url),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "Waiting for another migrate" not in check.stdout
