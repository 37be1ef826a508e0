"""Django's cache while it does not answer (README, "Deploying past one box").

Unset, `CACHE_URL` leaves the cache in each worker's memory, which never fails. Set, the cache is a
Redis server, which can be down, unreachable or slow: then every call of Django's cache raises one of
redis-py's errors, after at most the connect or read timeout `config.settings.cache_backend` gives.
Each user of the cache decides what that means by what it protects:

- what only saves work (the rendered post bodies) goes on without the cache: the body is rendered;
- what keeps a limit (one export at a time a person, client registrations per address, the editor's
  preview budget) refuses for the moment, saying to try again, rather than let the limit lapse.

After a failure the process skips the cache for `DOWN_SECONDS` (the first user of it then tries
again): a page of ten posts, or a burst of requests, does not wait out a timeout per call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from django.core.cache import cache

logger = logging.getLogger("config.cache")

#: What a call of Django's cache raises when its Redis does not answer (refused, timed out, a wrong
#: password, a server still loading its data or read-only).
UNAVAILABLE: tuple[type[Exception], ...] = (redis.RedisError,)

#: How long the process leaves the cache alone after a call failed.
DOWN_SECONDS = 5.0
#: The wait a refusal asks for (Retry-After) while the cache does not answer.
RETRY_SECONDS = 30


class CacheUnavailable(Exception):
    """The cache does not answer, so a limit kept in it cannot be checked."""


class Health:
    """Whether this process's cache answered lately; logs when it stops answering (not each call)."""

    def __init__(self) -> None:
        self.down_until = 0.0

    def answering(self) -> bool:
        return time.monotonic() >= self.down_until

    def failed(self, what: str, exc: Exception) -> None:
        """A call failed: skip the cache a moment. Logged with the error's kind only, never its message
        or the URL (either may carry the password)."""
        if self.answering():
            logger.warning("the cache does not answer (%s): %s", type(exc).__name__, what)
        self.down_until = time.monotonic() + DOWN_SECONDS

    def reset(self) -> None:
        self.down_until = 0.0


health = Health()


@contextmanager
def needed(what: str) -> Iterator[None]:
    """Cache calls a limit depends on: CacheUnavailable while the cache does not answer.

    `what` says in the log what is refused meanwhile."""
    if not health.answering():
        raise CacheUnavailable
    try:
        yield
    except UNAVAILABLE as exc:
        health.failed(what, exc)
        raise CacheUnavailable from None


def get_if_answering(key: str, what: str) -> Any:
    """`cache.get(key)` for what only saves work: None, a miss, while the cache does not answer."""
    if not health.answering():
        return None
    try:
        return cache.get(key)
    except UNAVAILABLE as exc:
        health.failed(what, exc)
        return None


def set_if_answering(key: str, value: Any, seconds: int, what: str) -> None:
    """`cache.set(...)` for what only saves work: nothing kept while the cache does not answer."""
    if not health.answering():
        return
    try:
        cache.set(key, value, seconds)
    except UNAVAILABLE as exc:
        health.failed(what, exc)
