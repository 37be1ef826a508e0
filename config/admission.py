"""Admission: when a worker is overloaded, the answers already streaming keep their pace and new
turns wait their turn.

A gevent worker is one event loop on one core. Starting a turn costs it far more CPU than
streaming a token (two requests, a few dozen queries; on SQLite none of it yields). When messages
arrive faster than the worker can start them, every greenlet waits behind the starts, and every
running answer stutters. So a new turn starts only while the loop keeps time:

- a monitor greenlet sleeps `TICK` over and over and records how late it wakes (the loop's *lag*),
  from the first start until `IDLE_SECONDS` pass without one;
- `admit()` lets a start through while the lag is within `AGENT_ADMISSION_LAG_MS`, at most one
  per tick (so the monitor sees each start's cost before it lets in the next), in arrival order;
- the served app (`config/wsgi.py`) calls it for a POST to a view named in `ADMISSION_GATED_VIEWS`
  (the views that start a turn; `starts_turn`) before Django handles the request: a waiting
  request has cost the worker nothing yet, and holds no runner (`agent.runners`) or connection;
- a start that has waited `AGENT_ADMISSION_MAX_WAIT_SECONDS` goes through anyway: a message is
  never refused for load, only delayed.

Only gevent workers have a loop to protect; with threads (tests, `manage.py`) `admit()` returns
at once. `AGENT_ADMISSION_LAG_MS=0` turns it off. This is the deploy layer's: the engine does not
know about it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from django.urls import Resolver404, resolve

from agent.runtime import gevent_patched

logger = logging.getLogger(__name__)

# Seconds between the monitor's wake-ups: at most 400 starts a second while the loop keeps time.
# Under load a wake-up comes later than this (the loop serves the streams first), and with a longer
# tick one start per wake-up falls behind a burst of messages, the last starting seconds after it
# arrived. The lag limit still holds starts back.
TICK = 0.0025
# The monitor stops after this long without a start, once any delayed starts are reported (waking
# 400 times a second would cost an idle worker CPU for nothing); the next start wakes it again, and is
# let in at once, as the first of a burst always is.
IDLE_SECONDS = 2.0
REPORT_SECONDS = 60.0  # at most one log line this often, and only when starts were delayed
DELAYED = 0.1  # a start that waited at least this long counts as delayed in that line

_state: dict[str, Any] = {
    "monitor": None,
    "door": None,
    "tick": None,
    "ticks": 0,
    "admitted_at": -1,
    "lag": 0.0,
    "asked": 0.0,  # when a start last asked to be let in (time.monotonic)
}
_delays: dict[str, Any] = {"count": 0, "longest": 0.0, "since": time.monotonic()}


def lag() -> float:
    """The loop's latest lag in seconds (0 until the monitor runs)."""
    return _state["lag"]


def admit() -> float:
    """Wait until the worker can take a new turn; returns the seconds waited."""
    limit = settings.AGENT_ADMISSION_LAG_MS / 1000
    if limit <= 0 or not gevent_patched():
        return 0.0
    started = _state["asked"] = time.monotonic()
    _ensure_monitor()
    deadline = started + settings.AGENT_ADMISSION_MAX_WAIT_SECONDS
    with _state["door"]:  # one at a time, in arrival order
        while _state["ticks"] == _state["admitted_at"] or _state["lag"] > limit:
            if time.monotonic() >= deadline:
                logger.warning(
                    "admission: starting a turn after %.1f s of waiting (loop lag %.0f ms)",
                    time.monotonic() - started,
                    1000 * _state["lag"],
                )
                break
            _ensure_monitor()  # (a monitor that died is replaced; its waiters then wait on the new one's ticks)
            _state["tick"].wait(1.0)
        _state["admitted_at"] = _state["ticks"]
    waited = time.monotonic() - started
    if waited >= DELAYED:
        _delays["count"] += 1
        _delays["longest"] = max(_delays["longest"], waited)
    return waited


def report(now: float) -> None:
    """Tell the operator, once per `REPORT_SECONDS` at most, that new turns had to wait: the worker
    is short of CPU for the messages it gets (add workers or hosts)."""
    if now - _delays["since"] < REPORT_SECONDS:
        return
    if _delays["count"]:
        logger.warning(
            "admission: %d new turns waited for this worker in the last %.0f s (longest %.1f s); "
            "it is short of CPU for its load: add workers or hosts",
            _delays["count"],
            now - _delays["since"],
            _delays["longest"],
        )
    _delays.update(count=0, longest=0.0, since=now)


def starts_turn(environ: dict[str, Any]) -> bool:
    """Whether a WSGI request is a POST to a view named in `ADMISSION_GATED_VIEWS` (URL names such
    as "chat:send"): one that starts a turn."""
    if environ.get("REQUEST_METHOD") != "POST":
        return False
    try:
        match = resolve(environ.get("PATH_INFO") or "/")
    except Resolver404:
        return False
    return match.view_name in settings.ADMISSION_GATED_VIEWS


def _ensure_monitor() -> None:
    import gevent
    from gevent.event import Event
    from gevent.lock import Semaphore

    if _state["monitor"] is None or _state["monitor"].dead:
        _state["door"] = _state["door"] or Semaphore(1)
        _state["tick"] = Event()
        _state["monitor"] = gevent.spawn(_monitor)


def _monitor() -> None:
    from gevent.event import Event

    while True:
        before = time.monotonic()
        time.sleep(TICK)  # gevent's: this only runs under gevent
        _state["lag"] = max(0.0, time.monotonic() - before - TICK)
        _state["ticks"] += 1
        tick, _state["tick"] = _state["tick"], Event()
        tick.set()  # wakes whoever waits for this tick; later waiters wait on the new one
        now = time.monotonic()
        try:
            report(now)
        except Exception:  # a broken log handler must not stop the monitor
            pass
        if now - _state["asked"] > IDLE_SECONDS and not _delays["count"] and not _state["door"].locked():
            _state["monitor"], _state["lag"] = None, 0.0  # nobody waits: the next start wakes a new one
            return
