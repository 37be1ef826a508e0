"""Retry a stream that fails before its first event; never once output has started."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

from agent import logcontext
from agent.backends.base import current_interrupt
from agent.exceptions import BackendError
from agent.values import ModelEvent

logger = logcontext.get_logger("agent.backends")

MAX_BACKOFF_SECONDS = 20.0
# The longest server-asked wait (Retry-After) a turn sits through before trying again; a server
# that asks for longer gets no early retry: the call fails (retryable) and the person is told to
# try again. `AGENT_MAX_RETRY_WAIT_SECONDS` overrides it.
MAX_RETRY_WAIT_SECONDS = 30.0


def backoff_seconds(attempt: int, retry_after: float | None = None, *, base: float = 0.5) -> float:
    """Capped exponential backoff with full jitter; a server's Retry-After wins when it is longer
    (`stream_with_retries` never retries when that is past its cap)."""
    delay = random.uniform(0, min(MAX_BACKOFF_SECONDS, base * (2**attempt)))
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


def max_retry_wait() -> float:
    from django.conf import settings

    return float(getattr(settings, "AGENT_MAX_RETRY_WAIT_SECONDS", MAX_RETRY_WAIT_SECONDS))


def stream_with_retries(
    open_stream: Callable[[], Iterator[ModelEvent]],
    *,
    retries: int,
    sleep: Callable[[float], None] = time.sleep,
    label: str = "backend",
) -> Iterator[ModelEvent]:
    """Yield from `open_stream()`, reopening it after a retryable BackendError raised before any event.

    A Stop (the call's `Interrupt`) ends the wait before a retry, and no retry is made after it.
    """
    interrupt = current_interrupt()
    attempt = 0
    while True:
        started = False
        try:
            for event in open_stream():
                started = True
                yield event
            return
        except BackendError as exc:
            if started or not exc.retryable or attempt >= retries or (interrupt is not None and interrupt.fired):
                raise
            if exc.retry_after is not None and exc.retry_after > max_retry_wait():
                logger.warning(
                    "%s: the server asks to wait %.0fs, longer than we wait: not retried", label, exc.retry_after
                )
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
            if interrupt is None:
                sleep(delay)
            elif interrupt.wait(delay):
                raise
