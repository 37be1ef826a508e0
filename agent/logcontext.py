"""Structured context on every log line of a turn: session, user and turn ids."""

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
