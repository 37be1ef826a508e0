"""All settings come from the environment (CONTRACT §2); see the README's table."""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    """A switch; a word that is neither on nor off is refused (a typo must not turn a protection off)."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be 1 or 0 (true/false, yes/no, on/off), got {raw!r}.")


def env_int(name: str, default: int, *, no_zero: str = "") -> int:
    """A whole number, 0 (off) or more; given `no_zero` (what 0 would do), 1 or more."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}.") from None
    if value < 0:  # every count, size and limit here is 0 (off) or more
        raise ImproperlyConfigured(f"{name} must be 0 or more, got {raw!r}.")
    if value == 0 and no_zero:  # (those where 0 would not be "off" but a feature that cannot work)
        raise ImproperlyConfigured(f"{name} must be 1 or more ({no_zero}), got {raw!r}.")
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}.") from None
    if not math.isfinite(value):
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}.")
    if value < 0:  # every time, size and amount here is 0 (off) or more
        raise ImproperlyConfigured(f"{name} must be 0 or more, got {raw!r}.")
    return value


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"

# (Blank is the default: an empty list would answer 400 to every page with DEBUG off.)
ALLOWED_HOSTS = [
    h.strip() for h in (os.environ.get("ALLOWED_HOSTS", "").strip() or "127.0.0.1,localhost").split(",") if h.strip()
]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

INSTALLED_APPS = [
    "accounts.admin_apps.ThrottledAdminConfig",  # django.contrib.admin, its sign-in limited like the site's
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.sitemaps",
    "django_htmx",
    "accounts",
    "agent",
    "blog",
    "oauth2_provider",  # django-oauth-toolkit: the authorization server for connectors
    "connectors",  # /mcp and the OAuth glue around it
    "config.apps.SiteConfig",  # the deploy layer's checks (config/checks.py)
]

MIDDLEWARE = [
    "config.middleware.HealthCheckMiddleware",  # GET /healthz, before the host check and the HTTPS redirect
    "config.middleware.ClientAddressMiddleware",  # REMOTE_ADDR: the client's, behind a trusted proxy
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "config.middleware.PrivateByDefaultMiddleware",  # what one person's session made: no shared cache keeps it
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.timezones.TimeZoneMiddleware",  # times in the zone the browser named (the `tz` cookie)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "accounts.middleware.SignInAsAPageMiddleware",  # a fragment asked for when signed out: sign in as a page
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

try:
    DATABASES = {
        "default": dj_database_url.parse(
            os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
            conn_max_age=0,
            # With the PostgreSQL pool this is what makes the pool check a connection as it hands it out
            # (Django passes psycopg_pool's check_connection only when health checks are on).
            conn_health_checks=True,
        )
    }
except ValueError:  # an unknown scheme, a port that is no number; not echoed: the URL may hold a password
    raise ImproperlyConfigured(
        "DATABASE_URL must be a database URL such as postgres://user:password@host:5432/name or sqlite:///path."
    ) from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Persistent: SQLite parses the whole schema on every new connection. The greenlets (threads)
    # that keep one are long-lived: the runners that handle requests and run turns
    # (agent/runners.py, config/wsgi.py) close theirs when they end; a threaded server's threads
    # (`manage.py runserver`) close theirs after each request.
    DATABASES["default"]["CONN_MAX_AGE"] = None
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

# Django picks the hasher that checks a password by its hash's algorithm, and of several with one
# algorithm the last listed: so Django's own PBKDF2PasswordHasher (the same pbkdf2_sha256 hashes) is
# not listed, or every sign-in would check its password with it, blocking the gevent worker.
PASSWORD_HASHERS = [
    "config.hashers.GeventPBKDF2PasswordHasher",  # same pbkdf2_sha256 hashes; does not block gevent
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
TIME_ZONE = "UTC"  # what a reader sees until their browser names its zone (accounts/timezones.py)
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Attachments (and post covers) go through Django's default storage: files under MEDIA_ROOT, or an
# S3-compatible bucket through django-storages when AGENT_MEDIA_STORAGE=s3 (README, "Attachments").
# They are never served from MEDIA_URL: only views that check who asks serve them.
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT") or BASE_DIR / "media")


def media_storage(environ: Mapping[str, str]) -> dict:
    """The default storage's STORAGES entry from AGENT_MEDIA_STORAGE (and, for s3, AGENT_MEDIA_S3_*)."""
    kind = environ.get("AGENT_MEDIA_STORAGE", "filesystem").strip().lower() or "filesystem"
    if kind == "filesystem":
        return {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    if kind != "s3":
        raise ImproperlyConfigured(f"AGENT_MEDIA_STORAGE must be filesystem or s3, got {kind!r}.")
    if not environ.get("AGENT_MEDIA_S3_BUCKET"):
        raise ImproperlyConfigured("AGENT_MEDIA_STORAGE=s3 needs AGENT_MEDIA_S3_BUCKET.")
    # boto3 refuses both only when the storage's client is made: the endpoint at the first upload (a
    # person's request), the addressing style in `manage.py check` with a traceback. Said here instead.
    endpoint = environ.get("AGENT_MEDIA_S3_ENDPOINT_URL", "").strip() or None
    if endpoint is not None:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:  # (not echoed: it may carry a key)
            raise ImproperlyConfigured(
                "AGENT_MEDIA_S3_ENDPOINT_URL must be an http:// or https:// URL with a host, such as https://s3.example.com."
            )
    style = environ.get("AGENT_MEDIA_S3_ADDRESSING_STYLE", "").strip().lower() or None
    if style not in (None, "auto", "virtual", "path"):
        raise ImproperlyConfigured(f"AGENT_MEDIA_S3_ADDRESSING_STYLE must be auto, virtual or path, got {style!r}.")
    options = {
        "bucket_name": environ["AGENT_MEDIA_S3_BUCKET"],
        "endpoint_url": endpoint,
        "region_name": environ.get("AGENT_MEDIA_S3_REGION") or None,
        "location": environ.get("AGENT_MEDIA_S3_PREFIX", "").strip("/"),
        "addressing_style": style,
        "default_acl": None,  # private objects: every read goes through the app's checks
        "file_overwrite": False,
    }
    if environ.get("AGENT_MEDIA_S3_ACCESS_KEY_ID"):  # else boto3's credential chain
        options["access_key"] = environ["AGENT_MEDIA_S3_ACCESS_KEY_ID"]
        options["secret_key"] = environ.get("AGENT_MEDIA_S3_SECRET_ACCESS_KEY", "")
    return {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": options}


STORAGES = {
    "default": media_storage(os.environ),
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}


def cache_backend(environ: Mapping[str, str]) -> dict:
    """Django's CACHES["default"] from CACHE_URL: unset = each worker process's own memory (Django's
    default); redis:// or rediss:// = Django's own RedisCache, one cache for every worker and host that
    names the same server (the one-export-at-a-time place, the registration count, the preview budget
    and the rendered post bodies; `config/cache.py` says what each does while it does not answer)."""
    url = environ.get("CACHE_URL", "").strip()
    if not url:
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - read for its ValueError: a port that is no number
    except ValueError:
        parts = None
    db = parts.path.strip("/") if parts else ""
    if parts is None or parts.scheme not in ("redis", "rediss") or not parts.hostname or not (db == "" or db.isdigit()):
        raise ImproperlyConfigured(  # (not echoed: the URL may hold a password)
            "CACHE_URL must be a Redis URL such as redis://host:6379/1 or rediss://:password@host:6380/1."
        )
    return {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": url,
        # Passed by Django to redis-py's connection pool: a Redis that does not answer holds a cache call
        # 1 s at most to connect and 2 s for an answer (redis-py's defaults: 5 s each), never for good.
        "OPTIONS": {"socket_connect_timeout": 1.0, "socket_timeout": 2.0},
    }


# Django's cache (CACHE_URL; README, "Deploying past one box").
CACHES = {"default": cache_backend(os.environ)}

# Blogs one person may start on the site (`/blogs/new/`) and own at once; 0 = only the admin makes blogs.
BLOGS_PER_PERSON = env_int("BLOGS_PER_PERSON", 10)

LOGIN_URL = "/accounts/login/"
LOGIN_FAILURES_PER_15_MINUTES = env_int("LOGIN_FAILURES_PER_15_MINUTES", 10)  # per username; 0 = off
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# Security: production defaults, loosened only by DEBUG or explicit settings.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
# The TLS-terminating proxy's addresses (gunicorn's own FORWARDED_ALLOW_IPS, read here too): from
# them, and only from them, `X-Forwarded-Proto` says the scheme (gunicorn) and `X-Forwarded-For`
# says the client's address (`config.middleware.ClientAddressMiddleware`). `*` = any address.
FORWARDED_ALLOW_IPS = [ip.strip() for ip in (os.environ.get("FORWARDED_ALLOW_IPS") or "127.0.0.1,::1").split(",")]
# No SECURE_PROXY_SSL_HEADER: Django would believe any client's `X-Forwarded-Proto`. gunicorn
# decides the scheme instead, trusting that header only from FORWARDED_ALLOW_IPS (the proxy;
# config/gunicorn.conf.py), and Django reads it from the request's `wsgi.url_scheme`.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG and SECURE_SSL_REDIRECT)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = not DEBUG
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

LOG_LEVEL = os.environ.get("LOG_LEVEL", "").strip().upper() or "INFO"  # (`debug` as well as `DEBUG`)
if LOG_LEVEL not in logging.getLevelNamesMapping():
    raise ImproperlyConfigured(f"LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {LOG_LEVEL!r}.")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "agent_context": {"()": "agent.logcontext.ContextFilter"},
        "health_probes": {"()": "config.middleware.QuietHealthProbes"},
    },
    "formatters": {
        "plain": {
            "format": "%(asctime)s %(levelname)s %(name)s "
            "session=%(session_id)s user=%(user_id)s turn=%(turn_id)s %(message)s"
        },
    },
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["agent_context"]}},
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        "django.request": {"level": "ERROR", "filters": ["health_probes"]},  # /healthz logs its own changes
        "httpx": {"level": "WARNING"},
        "botocore": {"level": "WARNING"},
        "pypdf": {"level": "ERROR"},  # a malformed upload's parse warnings are not ours to report
        # At DEBUG these write the codes and tokens they handle, whole (the database keeps digests):
        # LOG_LEVEL, but never below INFO.
        "oauthlib": {"level": max(logging.INFO, logging.getLevelNamesMapping()[LOG_LEVEL])},
        "oauth2_provider": {"level": max(logging.INFO, logging.getLevelNamesMapping()[LOG_LEVEL])},
    },
}

# --- The agent engine -------------------------------------------------------
AGENT_BACKEND = os.environ.get("AGENT_BACKEND", "demo").strip() or "demo"
# Backends beyond the engine's own (fake, openai, bedrock, anthropic): the blog's offline demo model.
AGENT_BACKEND_CLASSES = {"demo": "blog.demo.DemoBackend"}
AGENT_MODEL = os.environ.get("AGENT_MODEL", "").strip()
AGENT_MAX_TOOL_CYCLES = env_int("AGENT_MAX_TOOL_CYCLES", 8)
AGENT_MAX_TOKENS = env_int("AGENT_MAX_TOKENS", 4096)
AGENT_MODEL_REASONING = env_bool("AGENT_MODEL_REASONING", False)
AGENT_PROMPT_CACHING = env_bool("AGENT_PROMPT_CACHING", True)  # Bedrock cachePoint, Anthropic cache_control
AGENT_REASONING = os.environ.get("AGENT_REASONING", "off").strip().lower() or "off"
if AGENT_REASONING not in ("off", "low", "medium", "high") and not AGENT_REASONING.isdigit():
    raise ImproperlyConfigured(
        f"AGENT_REASONING must be off, low, medium, high or a number of tokens; got {AGENT_REASONING!r}."
    )
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
# "auto" runs each turn in a greenlet of its own under gevent (a runner, agent/runners.py, which keeps
# its database connection for its next turn), else in a thread; "thread": a thread (a runner too);
# "inline" runs it inside the POST (tests, the terminal surface).
AGENT_TURN_EXECUTOR = os.environ.get("AGENT_TURN_EXECUTOR", "auto")
# Under gevent a new turn starts only while the worker's loop runs within this many ms of time,
# so running answers keep their pace under a burst of new messages (config/admission.py); 0 = off.
AGENT_ADMISSION_LAG_MS = env_float("AGENT_ADMISSION_LAG_MS", 20.0)
AGENT_ADMISSION_MAX_WAIT_SECONDS = env_float("AGENT_ADMISSION_MAX_WAIT_SECONDS", 60.0)
# The views whose POSTs start a turn (URL names): admission holds these back, nothing else.
ADMISSION_GATED_VIEWS = ["agent:messages", "agent:approval", "chat:send", "chat:approval"]
# The turn-event bus (agent/events): unset = in-process (one worker); redis://host:port/db = Redis
# carries each turn's events, Stop and the blogs' effects across workers and hosts.
AGENT_EVENTS_URL = os.environ.get("AGENT_EVENTS_URL", "").strip()
AGENT_EVENTS_BACKEND = "agent.events.redis.RedisBus" if AGENT_EVENTS_URL else "agent.events.local.LocalBus"
AGENT_EVENTS_MAX_LEN = env_int("AGENT_EVENTS_MAX_LEN", 50_000)  # entries kept per turn's Stream
AGENT_SESSION_POLICY = os.environ.get("AGENT_SESSION_POLICY", "blog.chat.BlogChatPolicy")


def prices_from(raw: str) -> dict[str, dict]:
    """AGENT_PRICES read: model id to its prices, each a number ($/Mtok; `long`: the same, for long prompts).

    Checked here: a price that is no number would fail every turn of its model at its first call.
    """

    def numbers(price: object, *, nested: bool = False) -> bool:
        return isinstance(price, dict) and all(
            (key == "long" and not nested and numbers(value, nested=True))
            or (isinstance(value, int | float) and not isinstance(value, bool) and value >= 0)
            for key, value in price.items()
        )

    try:
        prices = json.loads(raw or "{}")
    except json.JSONDecodeError:
        prices = None
    if not isinstance(prices, dict) or not all(numbers(price) for price in prices.values()):
        raise ImproperlyConfigured(
            'AGENT_PRICES must be a JSON object of model id to prices, e.g. {"my-model": {"input": 0.15, '
            '"output": 0.6}} (dollars per million tokens).'
        )
    return prices


AGENT_PRICES = prices_from(os.environ.get("AGENT_PRICES", ""))

OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").strip().rstrip("/")
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "").strip()  # (a key from a file ends in a line break)
# PDFs as chat/completions `file` parts: `auto` = only for api.openai.com; `1` / `0` for any other server.
OPENAI_PDF_FILES = os.environ.get("OPENAI_PDF_FILES", "").strip().lower() or "auto"
if OPENAI_PDF_FILES != "auto":  # (a word the backend did not know read as "never")
    try:
        OPENAI_PDF_FILES = "1" if env_bool("OPENAI_PDF_FILES", False) else "0"
    except ImproperlyConfigured:
        raise ImproperlyConfigured(f"OPENAI_PDF_FILES must be auto, 1 or 0, got {OPENAI_PDF_FILES!r}.") from None
ANTHROPIC_BASE_URL = os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com").strip().rstrip("/")
ANTHROPIC_API_KEY = os.environ.get("ANTHROPIC_API_KEY", "").strip()
AWS_REGION = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or ""
AGENT_FIRST_EVENT_TIMEOUT_SECONDS = env_float("AGENT_FIRST_EVENT_TIMEOUT_SECONDS", 60.0)
AGENT_EVENT_TIMEOUT_SECONDS = env_float("AGENT_EVENT_TIMEOUT_SECONDS", 60.0)
AGENT_RETRIES = env_int("AGENT_RETRIES", 2)
AGENT_MAX_RETRY_WAIT_SECONDS = env_float("AGENT_MAX_RETRY_WAIT_SECONDS", 30.0)

CSRF_FAILURE_VIEW = "config.errors.csrf_failure"

# Tools that wait for a person's approval (empty = none), and how long an approval stays open.
AGENT_CONFIRM_TOOLS = [
    t.strip() for t in os.environ.get("AGENT_CONFIRM_TOOLS", "delete_post,publish_post").split(",") if t.strip()
]
AGENT_APPROVAL_TTL_SECONDS = env_int("AGENT_APPROVAL_TTL_SECONDS", 900)

# Attachments (README, "Attachments"): per file, per message (all files together), files per message,
# and pixels per image (all frames of an animation together), checked before anything is decoded.
AGENT_MAX_UPLOAD_MB = env_float("AGENT_MAX_UPLOAD_MB", 10.0)
AGENT_MAX_UPLOAD_MB_PER_MESSAGE = env_float("AGENT_MAX_UPLOAD_MB_PER_MESSAGE", 20.0)
AGENT_MAX_UPLOAD_FILES = env_int("AGENT_MAX_UPLOAD_FILES", 8)
AGENT_MAX_IMAGE_PIXELS = env_int("AGENT_MAX_IMAGE_PIXELS", 25_000_000)
AGENT_MAX_IMAGE_FRAMES = env_int("AGENT_MAX_IMAGE_FRAMES", 1000)  # frames of one animated image
# 0 = the model takes no images: a message with one is refused before any call.
AGENT_MODEL_IMAGES = env_bool("AGENT_MODEL_IMAGES", True)
FILE_UPLOAD_HANDLERS = [
    "agent.upload_handler.UploadLimitHandler",  # refuses oversized bodies before they are buffered
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# Bounded context: what is sent stays under this estimate; older messages become a summary.
AGENT_CONTEXT_MAX_TOKENS = env_int("AGENT_CONTEXT_MAX_TOKENS", 60000)
AGENT_CONTEXT_KEEP_MESSAGES = env_int("AGENT_CONTEXT_KEEP_MESSAGES", 20)

# --- Connectors: /mcp (Model Context Protocol) and its OAuth 2.1 authorization server ----------
MCP_CALLS_PER_MINUTE = env_int("MCP_CALLS_PER_MINUTE", 60)  # per connected client (OAuth client id); 0 = off
MCP_MAX_REQUEST_BYTES = env_int(
    "MCP_MAX_REQUEST_BYTES", 262_144, no_zero="every call to /mcp would answer 413"
)  # one JSON-RPC message; larger ones get 413
DCR_REGISTRATIONS_PER_HOUR = env_int("DCR_REGISTRATIONS_PER_HOUR", 20)  # per address on /oauth/register/; 0 = off
OAUTH2_PROVIDER = {
    # The scopes a client may ask for are the blog operations' own (CONTRACT §6); what it gets is
    # decided on the consent page and the Clients screen (connectors/oauth.py, blog/grants.py).
    "SCOPES": {
        "posts:read": "Read posts and drafts",
        "posts:write": "Create and edit drafts",
        "posts:publish": "Publish and unpublish posts",
        "posts:delete": "Delete posts",
    },
    "DEFAULT_SCOPES": ["posts:read"],
    "OAUTH2_VALIDATOR_CLASS": "connectors.oauth.ConnectorValidator",
    "PKCE_REQUIRED": True,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ACCESS_TOKEN_EXPIRE_SECONDS": env_int(
        "MCP_ACCESS_TOKEN_SECONDS", 3600, no_zero="a connected client's token would be expired as it is issued"
    ),
    "REFRESH_TOKEN_EXPIRE_SECONDS": env_int("MCP_REFRESH_TOKEN_SECONDS", 30 * 24 * 3600),  # 0 = never (DOT's)
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # Loopback http redirect URIs are what native MCP clients use (RFC 8252); the registration
    # endpoint accepts http only for loopback hosts and https otherwise (connectors/registration.py).
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http"],
    "REQUEST_APPROVAL_PROMPT": "force",
    # RFC 9700: no implicit or password grant, S256 only, tokens only in the header, the RFC 9207
    # `iss` on every authorization response, tokens hashed at rest.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    # Advertised in the RFC 8414 metadata: our own registration endpoint (DOT's is not mounted).
    "DCR_ENABLED": True,
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": ["none"],
    "OAUTH2_PROTECTED_RESOURCE_NAME": "Field Desk blog operations (MCP)",
}
# W008 flags "http" among the redirect schemes. It stays because native clients receive the code
# on a loopback http URI (RFC 8252 §7.3, the MCP authorization spec); registration admits http
# for 127.0.0.1, [::1] and localhost only, and redirect URIs match exactly.
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]
