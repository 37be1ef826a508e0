"""All settings come from the environment (CONTRACT §2); see the README's table."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}.") from None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}.") from None


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "accounts.admin_apps.ThrottledAdminConfig",  # django.contrib.admin, its sign-in limited like the site's
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "accounts",
    "agent",
    "blog",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.admission.AdmissionMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "config.middleware.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=0,
        # With the PostgreSQL pool this is what makes the pool check a connection as it hands it out
        # (Django passes psycopg_pool's check_connection only when health checks are on).
        conn_health_checks=True,
    )
}
DATABASE_POOL_MAX_SIZE = env_int("DATABASE_POOL_MAX_SIZE", 20)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DATABASE_POOL_MAX_SIZE:
    # Django's connection pool (psycopg 3's psycopg_pool). Under gevent every greenlet would open its
    # own connection; a pool caps them (a turn holds one only for a short write, never while it waits
    # on a model). With CONN_HEALTH_CHECKS (above) the pool checks each connection as it hands it out,
    # so one dropped by a restart or pg_terminate_backend while idle in the pool is replaced, not
    # handed to a request.
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": DATABASE_POOL_MAX_SIZE,
        "timeout": env_float("DATABASE_POOL_TIMEOUT", 30.0),
    }
# The process's lease watcher (agent/watch.py) renews the leases of its running turns. Through the pool
# it would wait behind it: while the pool is exhausted or rebuilding its connections after a storm,
# a live turn's lease could run out and a second message reclaim the running turn. So with the pool
# on, the watcher has a connection of its own, outside the pool (one per worker, kept open, checked
# before use, at most 5 s to connect). In tests it is the same database as `default`.
AGENT_LEASE_DATABASE = "default"
if "pool" in DATABASES["default"].get("OPTIONS", {}):
    _lease_options = {k: v for k, v in DATABASES["default"]["OPTIONS"].items() if k != "pool"}
    DATABASES["agent_lease"] = {
        **DATABASES["default"],
        "OPTIONS": {**_lease_options, "connect_timeout": 5},
        "CONN_MAX_AGE": None,
        "TEST": {"MIRROR": "default"},
    }
    AGENT_LEASE_DATABASE = "agent_lease"
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A test database of its own per test process: runs side by side on one server never share one.
    DATABASES["default"]["TEST"] = {"NAME": f"{DATABASES['default']['NAME']}_test_{os.getpid()}"}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, never ":memory:": threads of a test (and servers it starts) must share it.
    # One file per test process, so parallel runs never share it.
    _test_db = os.environ.get("TEST_SQLITE_NAME") or str(
        Path(tempfile.gettempdir()) / f"blog-test-{os.getpid()}.sqlite3"
    )
    DATABASES["default"]["TEST"] = {"NAME": _test_db}
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

PASSWORD_HASHERS = [
    "config.hashers.GeventPBKDF2PasswordHasher",  # same pbkdf2_sha256 hashes; does not block gevent
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

LOGIN_URL = "/accounts/login/"
LOGIN_FAILURES_PER_15_MINUTES = env_int("LOGIN_FAILURES_PER_15_MINUTES", 10)  # per username; 0 = off
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# Security: production defaults, loosened only by DEBUG or explicit settings.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG and SECURE_SSL_REDIRECT)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"agent_context": {"()": "agent.logcontext.ContextFilter"}},
    "formatters": {
        "plain": {
            "format": "%(asctime)s %(levelname)s %(name)s "
            "session=%(session_id)s user=%(user_id)s turn=%(turn_id)s %(message)s"
        },
    },
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["agent_context"]}},
    "root": {"handlers": ["stderr"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.request": {"level": "ERROR"},
        "httpx": {"level": "WARNING"},
        "botocore": {"level": "WARNING"},
    },
}

# --- The agent engine -------------------------------------------------------
AGENT_BACKEND = os.environ.get("AGENT_BACKEND", "demo").strip() or "demo"
# Backends beyond the engine's own (fake, openai, bedrock): the blog's offline demo model.
AGENT_BACKEND_CLASSES = {"demo": "blog.demo.DemoBackend"}
AGENT_MODEL = os.environ.get("AGENT_MODEL", "").strip()
AGENT_MAX_TOOL_CYCLES = env_int("AGENT_MAX_TOOL_CYCLES", 8)
AGENT_MAX_TOKENS = env_int("AGENT_MAX_TOKENS", 4096)
AGENT_BUDGET_TOKENS_PER_MINUTE = env_int("AGENT_BUDGET_TOKENS_PER_MINUTE", 20000)
AGENT_BUDGET_TOKENS_PER_HOUR = env_int("AGENT_BUDGET_TOKENS_PER_HOUR", 200000)
AGENT_BUDGET_USD_PER_MONTH = env_float("AGENT_BUDGET_USD_PER_MONTH", 5.0)
AGENT_BUDGET_GLOBAL_USD_PER_MONTH = env_float("AGENT_BUDGET_GLOBAL_USD_PER_MONTH", 100.0)
AGENT_MESSAGES_PER_MINUTE = env_int("AGENT_MESSAGES_PER_MINUTE", 20)
# Per-turn limits (agent/limits.py): calls past them get an error result the model reads, never run.
AGENT_MAX_MUTATIONS_PER_TURN = env_int("AGENT_MAX_MUTATIONS_PER_TURN", 8)
AGENT_MAX_TOOL_CALLS_PER_ANSWER = env_int("AGENT_MAX_TOOL_CALLS_PER_ANSWER", 16)
# Open streams per user in one worker process; the oldest is closed when one more opens (agent/streams.py).
AGENT_MAX_STREAMS_PER_USER = env_int("AGENT_MAX_STREAMS_PER_USER", 8)
AGENT_FAKE_SCRIPT = os.environ.get("AGENT_FAKE_SCRIPT", "")
AGENT_DEMO_DELAY_MS = env_int("AGENT_DEMO_DELAY_MS", 35)
AGENT_TURN_LEASE_SECONDS = env_int("AGENT_TURN_LEASE_SECONDS", 120)
AGENT_STOP_POLL_SECONDS = env_float("AGENT_STOP_POLL_SECONDS", 1.0)
AGENT_TOOL_TIMEOUT_SECONDS = env_float("AGENT_TOOL_TIMEOUT_SECONDS", 30.0)
# "auto" runs each turn in its own greenlet under gevent, else in a thread;
# "inline" runs it inside the POST (tests, the terminal surface).
AGENT_TURN_EXECUTOR = os.environ.get("AGENT_TURN_EXECUTOR", "auto")
# Under gevent a new turn starts only while the worker's loop runs within this many ms of time,
# so running answers keep their pace under a burst of new messages (config/admission.py); 0 = off.
AGENT_ADMISSION_LAG_MS = env_float("AGENT_ADMISSION_LAG_MS", 20.0)
AGENT_ADMISSION_MAX_WAIT_SECONDS = env_float("AGENT_ADMISSION_MAX_WAIT_SECONDS", 60.0)
# The views whose POSTs start a turn (URL names): admission holds these back, nothing else.
ADMISSION_GATED_VIEWS = ["agent:messages", "agent:approval", "chat:send", "chat:approval"]
AGENT_SESSION_POLICY = os.environ.get("AGENT_SESSION_POLICY", "blog.chat.BlogChatPolicy")
try:
    AGENT_PRICES = json.loads(os.environ.get("AGENT_PRICES", "") or "{}")
except json.JSONDecodeError:
    raise ImproperlyConfigured("AGENT_PRICES must be a JSON object of model id to prices.") from None

OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "")
AWS_REGION = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or ""
AGENT_FIRST_EVENT_TIMEOUT_SECONDS = env_float("AGENT_FIRST_EVENT_TIMEOUT_SECONDS", 60.0)
AGENT_EVENT_TIMEOUT_SECONDS = env_float("AGENT_EVENT_TIMEOUT_SECONDS", 60.0)
AGENT_RETRIES = env_int("AGENT_RETRIES", 2)

CSRF_FAILURE_VIEW = "config.errors.csrf_failure"

# Tools that wait for a person's approval (empty = none), and how long an approval stays open.
AGENT_CONFIRM_TOOLS = [
    t.strip() for t in os.environ.get("AGENT_CONFIRM_TOOLS", "delete_post,publish_post").split(",") if t.strip()
]
AGENT_APPROVAL_TTL_SECONDS = env_int("AGENT_APPROVAL_TTL_SECONDS", 900)

# Bounded context: what is sent stays under this estimate; older messages become a summary.
AGENT_CONTEXT_MAX_TOKENS = env_int("AGENT_CONTEXT_MAX_TOKENS", 60000)
AGENT_CONTEXT_KEEP_MESSAGES = env_int("AGENT_CONTEXT_KEEP_MESSAGES", 20)
