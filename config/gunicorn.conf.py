# Patch before anything imports sockets or psycopg (see shared NOTES: psycopg picks
# its wait function at import time).
from gevent import monkey

monkey.patch_all()

import os  # noqa: E402

bind = os.environ.get("BIND") or (f"0.0.0.0:{os.environ['PORT']}" if os.environ.get("PORT") else "127.0.0.1:8000")
worker_class = "gevent"
workers = int(os.environ.get("WEB_CONCURRENCY", "1"))
worker_connections = int(os.environ.get("WORKER_CONNECTIONS", "4000"))
timeout = 120
graceful_timeout = 20
keepalive = 5
accesslog = os.environ.get("ACCESS_LOG", None)
errorlog = "-"
control_socket_disable = True


def post_worker_init(worker):
    """SQLite: hold one connection for the worker's life.

    Closing a database's last connection makes SQLite checkpoint and remove its WAL, a file sync
    that stalls every greenlet of the worker; with this one open, other closes are cheap.
    """
    import sqlite3

    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"] in ("config.sqlite_pool", "django.db.backends.sqlite3") and str(db["NAME"]) != ":memory:":
        worker.sqlite_anchor = sqlite3.connect(str(db["NAME"]), check_same_thread=False)
