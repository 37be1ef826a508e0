"""Structured context on every log line of a turn: session, user and turn ids.

The context travels on the log record, as attributes (`session_id`, `user_id`, `turn_id`), never in
the message: a format names them (`config/settings.py` writes `session=… user=… turn=…` at the start
of each line), a structured handler keeps them as fields. The engine's own loggers (`get_logger`)
attach them to each record they make, so they are there whatever the host's logging configuration;
the project's handler filter adds them to everyone else's lines (Django's, the blog's) as well.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("agent_log_context", default=None)

FIELDS = ("session_id", "user_id", "turn_id")


@contextmanager
def bind(**values: Any) -> Iterator[None]:
    token = _context.set({**(_context.get() or {}), **{k: v for k, v in values.items() if v is not None}})
    try:
        yield
    finally:
        _context.reset(token)


class ContextFilter(logging.Filter):
    """Adds session_id, user_id and turn_id ("-" when unknown) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        values = _context.get() or {}
        for name in FIELDS:
            if not hasattr(record, name):
                setattr(record, name, values.get(name, "-"))
        return True


_attach = ContextFilter()


def get_logger(name: str) -> logging.Logger:
    """`logging.getLogger(name)`, each record it makes carrying the turn's context (a filter on the
    logger itself runs for every record it makes, before any handler of any configuration)."""
    logger = logging.getLogger(name)
    logger.addFilter(_attach)  # (once: a filter already there is not added again)
    return logger
