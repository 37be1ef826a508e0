"""The one interface every model provider implements (docs/engine.md, "Backends")."""

from __future__ import annotations

import contextvars
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Never, NoReturn

from agent.exceptions import BackendError
from agent.values import ModelEvent, NeutralMessage, ToolSpec, Usage, UsageKey

__all__ = [
    "Backend",
    "BackendError",
    "STOP_REASONS",
    "USAGE_KEYS",
    "CallContext",
    "Interrupt",
    "call_context",
    "current_interrupt",
    "interruptible",
    "parse_tool_input",
    "setting",
    "unknown_part",
    "zero_usage",
]

# `refusal`: the provider refused to answer; `incomplete`: a stop the adapter does not understand,
# or an answer cut off (CONTRACT §8): never reported as `end_turn`.
STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "stop_sequence", "content_filtered", "refusal", "incomplete")
USAGE_KEYS: tuple[UsageKey, ...] = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")

Event = ModelEvent


class NotJsonValue(ValueError):
    """NaN, Infinity or -Infinity: Python's parser takes them, JSON has them not, and neither has the
    database's JSON column the call is stored in."""


def not_json(constant: str) -> Any:
    """`json.loads(..., parse_constant=not_json)`: refuse NaN, Infinity and -Infinity (NotJsonValue)."""
    raise NotJsonValue(f"{constant} is not a JSON value")


def parse_tool_input(raw: str) -> tuple[dict[str, Any], str | None]:
    """A tool call's streamed input JSON (the joined fragments) → (input, error); an empty text is `{}`.

    The error is for the model (the call then gets an error result instead of running, which quotes
    it mid-sentence: no closing full stop).
    """
    if not raw.strip():
        return {}, None
    try:
        parsed = json.loads(raw, parse_constant=not_json)
    except json.JSONDecodeError as exc:
        return {}, f"The tool input is not valid JSON ({exc.msg} at position {exc.pos})"
    except NotJsonValue as exc:
        return {}, f"The tool input is not valid JSON ({exc})"
    except (ValueError, RecursionError) as exc:
        return {}, f"The tool input could not be parsed ({type(exc).__name__})"
    if not isinstance(parsed, dict):
        return {}, f"The tool input must be a JSON object, not {type(parsed).__name__}"
    return parsed, None


def unknown_part(part: Never, message: str) -> NoReturn:
    """The last case of an adapter's `match part["type"]`, where `assert_never` would be: mypy
    reports every part kind the match leaves out (`part` is not `Never` then). At run time a part
    of no known kind (from a caller the type checker does not see) is refused with `message`, a
    BackendError raised before any request is sent, as for any part an adapter cannot take."""
    raise BackendError(message, retryable=False)


class Interrupt:
    """How a Stop reaches a model call that waits on its server (docs/engine.md, "Stop").

    Between events the loop sees a Stop itself; but a model may be silent for a long while once it
    has begun to answer (a reasoning model thinking), and a read blocked on it would hold the Stop
    until the next event. A running turn has one Interrupt; whoever raises its Stop flag calls
    `fire()`, from another thread or greenlet. An adapter reading a response says how to cut it
    (`interruptible`): the cut makes the blocked read return at once, and the loop, seeing the Stop,
    ends the call as stopped rather than failed. A retry's wait ends too (`wait`).
    """

    def __init__(self) -> None:
        self._fired = threading.Event()
        self._lock = threading.Lock()  # a cut is never made after its response was given back
        self._cut: Callable[[], None] | None = None

    @property
    def fired(self) -> bool:
        return self._fired.is_set()

    def fire(self) -> None:
        with self._lock:
            self._fired.set()
            if self._cut is not None:
                _cut_quietly(self._cut)

    def wait(self, seconds: float) -> bool:
        """Sleep `seconds`, or less if it fires meanwhile (then True)."""
        return self._fired.wait(seconds)

    @contextmanager
    def cutting(self, cut: Callable[[], None]) -> Iterator[None]:
        with self._lock:
            self._cut = cut
            if self.fired:  # (it fired while the request was being sent: cut at once)
                _cut_quietly(cut)
        try:
            yield
        finally:
            with self._lock:
                self._cut = None


def _cut_quietly(cut: Callable[[], None]) -> None:
    try:
        cut()
    except OSError:
        pass  # already closed: the reader is done with it


class CallContext:
    """Which call of which session is being made; read by backends that need it (the fake, the demo).

    `call_index` (the session's model calls before this one) is counted only for a backend whose
    `uses_call_index` is true; for the others it is None and the count's query is never made.
    `interrupt` is the turn's, when a Stop can reach the call while it waits (`interruptible`).
    """

    def __init__(
        self, session_id: str, call_index: int | None, purpose: str = "chat", interrupt: Interrupt | None = None
    ) -> None:
        self.session_id = session_id
        self.call_index = call_index
        self.purpose = purpose  # "chat", or "summary" for a call that condenses older messages
        self.interrupt = interrupt


call_context: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar("agent_call_context", default=None)


def current_interrupt() -> Interrupt | None:
    """The Interrupt of the call being made here, if a Stop can reach it."""
    ctx = call_context.get()
    return ctx.interrupt if ctx is not None else None


@contextmanager
def interruptible(cut: Callable[[], None]) -> Iterator[None]:
    """While the block runs, a Stop of the turn calls `cut` (from another thread or greenlet). `cut`
    must make a read blocked on the call's response return at once (shut its socket down, or close
    it) and must not block; the read then fails, and the loop ends the call as stopped."""
    interrupt = current_interrupt()
    if interrupt is None:
        yield
        return
    with interrupt.cutting(cut):
        yield


def setting(value: Any, name: str, default: Any = None) -> Any:
    """An adapter's constructor argument, else the Django setting `name`, else `default`."""
    if value is not None:
        return value
    from django.conf import settings

    return getattr(settings, name, default)


def zero_usage() -> Usage:
    return {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0}


class Backend:
    """Subclasses translate neutral messages to their wire and the wire back to the four event kinds."""

    name = "base"
    default_model = ""
    uses_call_index = False  # True: reads CallContext.call_index, which costs a COUNT per turn
    offline = False  # True: answers without any model server (the fake, the demo): provider settings go unused

    def stream(
        self,
        *,
        system: str,
        messages: list[NeutralMessage],
        tools: list[ToolSpec],
        model: str,
        inference: dict[str, Any] | None = None,
    ) -> Iterator[ModelEvent]:
        """Yield `text`, `reasoning`, `tool_use` events, then one `done`; raise BackendError on failure."""
        raise NotImplementedError("Backend subclasses implement stream().")

    def check(self) -> list[str]:
        """Configuration problems, each one clear sentence (used by `manage.py check`)."""
        return []

    def cautions(self, model: str) -> list[str]:
        """What will not work with `model` through this backend, each one clear sentence (warnings of
        `manage.py check`: the site runs, but turns that need it fail)."""
        return []

    def _wire_limits(
        self,
        first_event_timeout: float | None,
        event_timeout: float | None,
        retries: int | None,
        sleep: Callable[[float], None],
    ) -> None:
        """What every network adapter waits for and retries: its arguments, else the settings."""
        self.first_event_timeout = float(setting(first_event_timeout, "AGENT_FIRST_EVENT_TIMEOUT_SECONDS", 60.0))
        self.event_timeout = float(setting(event_timeout, "AGENT_EVENT_TIMEOUT_SECONDS", 60.0))
        self.retries = int(setting(retries, "AGENT_RETRIES", 2))
        self._sleep = sleep
