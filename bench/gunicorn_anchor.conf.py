"""What-if for the SQLite finding (BENCHMARKS.md): the product's gunicorn settings plus one SQLite
connection held open for the worker's life, so no `connection.close()` is ever the last one (which
makes SQLite checkpoint the WAL, fsync and delete it, blocking the gevent hub). Not product code.
"""

import runpy
from pathlib import Path

globals().update(
    {
        k: v
        for k, v in runpy.run_path(str(Path(__file__).resolve().parent.parent / "config" / "gunicorn.conf.py")).items()
        if not k.startswith("__")
    }
)


def post_worker_init(worker):
    import sqlite3

    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        worker.bench_sqlite_anchor = sqlite3.connect(db["NAME"])
        worker.bench_sqlite_anchor.execute("SELECT count(*) FROM sqlite_master").fetchall()  # opens the WAL
