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
