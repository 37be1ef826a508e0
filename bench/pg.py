"""PostgreSQL databases of a run's own on 127.0.0.1:5432, each dropped after the run."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from bench.streams import run_quiet

PSQL = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1"]


@contextlib.contextmanager
def pg_database(prefix: str) -> Iterator[str]:
    """A database named `<prefix>_<pid>` (its name), dropped after."""
    db = f"{prefix}_{os.getpid()}"
    run_quiet(PSQL + ["-qc", f'CREATE DATABASE "{db}"'], os.environ.copy(), 60)
    try:
        yield db
    finally:
        run_quiet(PSQL + ["-qc", f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'], os.environ.copy(), 60)


def max_connections() -> int:
    return int(run_quiet(PSQL + ["-Atc", "SHOW max_connections"], os.environ.copy(), 30).strip())
