"""Retry a stream that fails before its first event; never once output has started."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from agent.exceptions import BackendError

logger = logging.getLogger("agent.backends")

MAX_BACKOFF_SECONDS = 20.0


def backoff_seconds(attempt: int, retry_after: float | None = None, *, base: float = 0.5) -> float:
    """Capped exponential backoff with full jitter; a server's Retry-After wins when it is longer."""
    delay = random.uniform(0, min(MAX_BACKOFF_SECONDS, base * (2**attempt)))
    if retry_after is not None:
        delay = max(delay, min(retry_after, MAX_BACKOFF_SECONDS))
    return delay


def stream_with_retries(
    open_stream: Callable[[], Iterator[dict[str, Any]]],
    *,
    retries: int,
    sleep: Callable[[float], None] = time.sleep,
    label: str = "backend",
) -> Iterator[dict[str, Any]]:
    """Yield from `open_stream()`, reopening it after a retryable BackendError raised before any event."""
    attempt = 0
    while True:
        started = False
        try:
            for event in open_stream():
                started = True
                yield event
            return
        except BackendError as exc:
            if started or not exc.retryable or attempt >= retries:
                raise
            delay = backoff_seconds(attempt, exc.retry_after)
            logger.warning(
                "%s: retryable failure before output (attempt %d): %s; retrying in %.2fs",
                label,
                attempt + 1,
                exc,
                delay,
            )
            attempt += 1
            sleep(delay)
