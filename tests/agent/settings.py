"""Engine-only test settings: a project of its own around `agent`, with nothing of this site's.

`tests/agent` runs under these (`make test` passes `--ds=tests.agent.settings`), so the engine's own
tests prove what docs/engine.md ("In a project of your own") promises: it needs Django's contrib apps
and nothing of `blog`, `connectors`, `accounts` or `config`. A toy notebook app (tests/agent/testapp)
registers its tools and supplies the session policy instead, and nothing here imports the project
(tests/agent/test_standalone.py guards it). What the engine's tests need of their surroundings is set
below, each with its reason; every other engine setting keeps its default (agent/conf.py).

From the environment, as the project's test run reads it: `DATABASE_URL` (SQLite when unset, PostgreSQL
in CI's second pass), `AGENT_EVENTS_URL` (the Redis bus; unset: in process), `AGENT_TURN_EXECUTOR`
(`inline` unless set) and `TEST_SQLITE_NAME`.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import dj_database_url

# (the project's tests/settings.py sets the same for its run: Django's ORM called from the threads
# and greenlets of a turn that a test drives in the test's own thread)
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

SECRET_KEY = "engine-tests-only-insecure-key"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",  # the engine's admin pages (tests/agent/test_admin.py)
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "agent",
    "tests.agent.testapp",  # the toy domain: tools registered at start-up, the session policy
]

# Django's `startproject` middleware: what docs/engine.md says the engine's views need, no more.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "tests.agent.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The engine's templates are its own (agent/templates) and extend no base page of a site's; the
        # project's sign-in page is what Django's LoginView asks of it (tests/agent/templates).
        "DIRS": [Path(__file__).resolve().parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# The database: DATABASE_URL parsed as the project parses it (dj-database-url), SQLite when unset.
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or "sqlite:///engine-tests.sqlite3", conn_max_age=0, conn_health_checks=True
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, never ":memory:": the threads a turn runs in share it with the test. One per test process,
    # so runs side by side never share one. Turns write from threads of their own while the test writes
    # too: wait for the lock (timeout), take it as a transaction begins (IMMEDIATE: two writers never
    # deadlock upgrading a read lock), readers beside a writer (WAL); connections kept, as runners keep theirs.
    DATABASES["default"]["CONN_MAX_AGE"] = None
    DATABASES["default"]["TEST"] = {
        "NAME": os.environ.get("TEST_SQLITE_NAME")
        or str(Path(tempfile.gettempdir()) / f"engine-test-{os.getpid()}.sqlite3")
    }
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A test database of its own per test process: runs side by side on one server never share one.
    DATABASES["default"]["TEST"] = {"NAME": f"{DATABASES['default']['NAME']}_test_{os.getpid()}"}
    # Django's PostgreSQL pool, and the lease watcher's connection of its own outside it
    # (AGENT_LEASE_DATABASE, docs/engine.md): what tests/agent/test_lease.py proves holds while
    # the pool has nothing to give.
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": 20, "timeout": 30.0}
    DATABASES["agent_lease"] = {
        **DATABASES["default"],
        "OPTIONS": {**{k: v for k, v in DATABASES["default"]["OPTIONS"].items() if k != "pool"}, "connect_timeout": 5},
        "CONN_MAX_AGE": None,
        "TEST": {"MIRROR": "default"},
    }
    AGENT_LEASE_DATABASE = "agent_lease"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast: tests make many users
USE_TZ = True
TIME_ZONE = "UTC"

STATIC_URL = "/static/"
# Attachments land in a folder of this test process.
MEDIA_ROOT = tempfile.mkdtemp(prefix="engine-test-media-")
# Removed when this process ends (a run, or a subprocess a test starts with these settings), by the
# process that made it, never by a forked child.
media_made_by = os.getpid()  # (lower case: not a setting)
atexit.register(lambda: os.getpid() == media_made_by and shutil.rmtree(MEDIA_ROOT, ignore_errors=True))
# Oversized uploads refused before they are read, as docs/engine.md ("HTTP") tells a project to set:
# the attachment tests go through it (test_attachments.py, test_api_mistakes.py).
FILE_UPLOAD_HANDLERS = [
    "agent.upload_handler.UploadLimitHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
LOGIN_URL = "/accounts/login/"  # (Django's default, where tests/agent/urls.py puts Django's own LoginView)
# No LOGGING: Django's default, as in a project with logging of its own; the engine's records carry
# whose they are without the project's filter (tests/agent/test_operations.py).

# --- The engine -----------------------------------------------------------------
AGENT_BACKEND = "fake"
AGENT_BACKEND_CLASSES: dict[str, str] = {}  # the engine's own backends only
AGENT_SESSION_POLICY = "tests.agent.testapp.policy.NotebookPolicy"
AGENT_CONFIRM_TOOLS = ["delete_note"]
# "inline" runs a turn inside the POST that starts it, so a test reads its whole stream at once.
AGENT_TURN_EXECUTOR = os.environ.get("AGENT_TURN_EXECUTOR", "inline")
AGENT_EVENTS_URL = os.environ.get("AGENT_EVENTS_URL", "").strip()  # (the Redis bus when set)
