"""`manage.py check` for the deploy layer: what would make the served site fail, said in one sentence."""

from __future__ import annotations

from pathlib import Path

import redis
from django.conf import settings
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core import checks
from django.core.cache import caches
from django.core.exceptions import ImproperlyConfigured

from config.cache import health


@checks.register()
def static_files_collected(app_configs=None, **kwargs):
    """With DEBUG off, pages name their static files through the manifest `collectstatic` writes:
    without it every page answers 500."""
    if settings.DEBUG or not isinstance(staticfiles_storage, ManifestFilesMixin):
        return []
    if staticfiles_storage.exists(staticfiles_storage.manifest_name):
        return []
    root = Path(settings.STATIC_ROOT) if settings.STATIC_ROOT else None
    if root is not None and root.is_dir() and any(root.iterdir()):  # copied, but by a collectstatic with DEBUG on
        return [
            checks.Error(
                f"Static files were collected without their manifest ({staticfiles_storage.manifest_name}), as "
                "`collectstatic` does with DEBUG on, so with DEBUG off every page would answer 500: run `python "
                "manage.py collectstatic --noinput` again with DEBUG off (it needs a SECRET_KEY to load the "
                "settings; it signs nothing with it).",
                id="config.E001",
            )
        ]
    return [
        checks.Error(
            "Static files are not collected, so with DEBUG off every page would answer 500: run "
            "`python manage.py collectstatic --noinput` (at build time, before the site starts).",
            id="config.E001",
        )
    ]


@checks.register()
def proxy_addresses_readable(app_configs=None, **kwargs):
    """FORWARDED_ALLOW_IPS names the proxy's addresses; a typo there would fail the first request."""
    from config.middleware import trusted_networks

    try:
        trusted_networks(settings.FORWARDED_ALLOW_IPS)
    except ImproperlyConfigured as e:
        return [checks.Error(str(e), id="config.E002")]
    return []


@checks.register(checks.Tags.caches)
def cache_shared_with_the_events(app_configs=None, **kwargs):
    """AGENT_EVENTS_URL says the site runs on several workers (or hosts); a cache left in each worker's
    memory then keeps each limit in it per worker, as many times over as there are workers."""
    backend = settings.CACHES.get("default", {}).get("BACKEND", "")
    if not settings.AGENT_EVENTS_URL or backend != "django.core.cache.backends.locmem.LocMemCache":
        return []
    return [
        checks.Warning(
            "AGENT_EVENTS_URL is set but CACHE_URL is not, so Django's cache stays each worker's own memory: "
            "one export at a time a person, the client registrations per address (DCR_REGISTRATIONS_PER_HOUR) "
            "and the editor's preview budget hold per worker, not for the site, and each worker renders post "
            "bodies for itself. Set CACHE_URL=redis://host:6379/1 to share them.",
            id="config.W001",
        )
    ]


#: A key nothing else uses: the check reads it, then writes it for a few seconds (`PROBE_SECONDS`), so a
#: Redis that answers reads but refuses writes (a read-only replica) is found too.
PROBE_KEY = "config.checks.cache-answers"
PROBE_SECONDS = 5


@checks.register(checks.Tags.caches)
def cache_answers(app_configs=None, **kwargs):
    """CACHE_URL names a Redis, which answers (a warning: the site serves without it, see config/cache.py).

    One `get` and one `set` (a read-only replica answers the first), each held at most by the connect and
    read timeouts `config.settings.cache_backend` gives. When either fails, this process leaves the cache
    alone a moment, as after a request's failed call
    (`config.cache.health`): a worker whose boot found the cache away does not wait out a timeout again
    at its first request that uses it."""
    backend = settings.CACHES.get("default", {}).get("BACKEND", "")
    if backend != "django.core.cache.backends.redis.RedisCache":
        return []
    try:
        caches["default"].get(PROBE_KEY)
        caches["default"].set(PROBE_KEY, "", PROBE_SECONDS)  # (a read-only replica answers reads, refuses this)
    except redis.RedisError as exc:  # named by its kind alone: the URL, and redis-py's message, may hold the password
        health.failed("checked at start-up (config.W002)", exc)
        kind = type(exc).__name__
        if isinstance(exc, redis.AuthenticationError):  # (it answers: the server to look at is up)
            problem, until = f"refuses its user or password ({kind})", "until it accepts them"
        elif isinstance(exc, redis.ReadOnlyError):
            problem, until = f"refuses writes ({kind}: a read-only replica?)", "until CACHE_URL names its primary"
        else:
            problem, until = f"does not answer ({kind})", "until it does"
        return [
            checks.Warning(
                f"The Redis server of CACHE_URL {problem}: {until}, exports and client registrations are "
                "refused, previews pause, and post bodies are rendered afresh for every page.",
                id="config.W002",
            )
        ]
    return []
