"""`manage.py migrate`, one run at a time per PostgreSQL database.

Hosts that each run `migrate` as they start (a Procfile's `release`, a container's entrypoint) ran it
at once against one database: one of two failed half-way (`relation "agent_session" already exists`)
and left its host down. Here a run takes a PostgreSQL advisory lock for its whole length: a second
run waits for the first, then finds nothing left to apply. `migrate --check` changes nothing and takes
no lock: `/healthz` asks it exactly while another host migrates, and must answer then, not after. On
SQLite (one box) nothing changes.

A run waiting asks for the lock again every half second rather than waiting in one statement: a
statement is a transaction while it waits, and an index built `CONCURRENTLY` (`agent/0016`, `0017`)
waits for every transaction of the database to end, so the two runs deadlocked and one failed.
"""

from __future__ import annotations

import time

from django.core.management.commands.migrate import Command as MigrateCommand
from django.db import DatabaseError, connections

# The advisory lock's key, any bigint nobody else takes in this database: b"migrate!" read as a number.
LOCK_KEY = int.from_bytes(b"migrate!", "big")
#: How often a run waiting for another asks for the lock again.
POLL_SECONDS = 0.5


def _locked(cursor) -> bool:
    """Whether this run took the lock (one short statement: it never waits)."""
    cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
    return bool(cursor.fetchone()[0])


class Command(MigrateCommand):
    def handle(self, *args, **options):
        connection = connections[options["database"]]
        if connection.vendor != "postgresql" or options["check_unapplied"]:
            return super().handle(*args, **options)
        with connection.cursor() as cursor:
            if not _locked(cursor):
                self.stdout.write("Waiting for another migrate of this database to finish...")
                while not _locked(cursor):
                    time.sleep(POLL_SECONDS)
        try:
            return super().handle(*args, **options)
        finally:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
            except DatabaseError:
                pass  # the connection is gone, and its session's lock with it
