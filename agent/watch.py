"""One watcher per process for its running turns: Stop flags and lease renewals in batched queries.

Checking each turn's Stop flag on its own would cost a query (and a connection) per running
turn per second; at a thousand streams that is a thousand queries a second. The watcher asks
once for all of this process's running turns and renews all their leases in one UPDATE.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from django.db import DEFAULT_DB_ALIAS, connections
from django.utils import timezone

from agent import hub, logcontext
from agent.conf import settings
from agent.models import Session, Turn
from agent.runtime import gevent_patched

logger = logcontext.get_logger("agent.watch")

_started = False
_lock = threading.Lock()


def ensure_running() -> None:
    """Start the watcher once per process (a greenlet under gevent, else a daemon thread)."""
    global _started
    with _lock:
        if _started:
            return
        _started = True
    if gevent_patched():
        import gevent

        gevent.spawn(_loop)
    else:
        threading.Thread(target=_loop, name="agent-watch", daemon=True).start()


def _loop() -> None:
    renewed = time.monotonic()
    while True:
        time.sleep(settings.AGENT_STOP_POLL_SECONDS)
        renew = time.monotonic() - renewed >= settings.AGENT_TURN_LEASE_SECONDS / 4
        if tick(renew=renew) and renew:
            renewed = time.monotonic()  # (a renewal that failed is tried again at the next pass)


def _alias() -> str:
    return getattr(settings, "AGENT_LEASE_DATABASE", DEFAULT_DB_ALIAS)


def tick(*, renew: bool) -> bool:
    """One pass of the watcher (`poll`), its failure logged; True when it succeeded.

    On a database of its own (`AGENT_LEASE_DATABASE`, outside the pool: config/settings.py) the
    connection is kept between passes while turns run, checked before each and dropped after a
    failure, so the next pass connects afresh instead of waiting behind the pool's reconnections;
    it is closed when no turn runs here, so an idle process holds none.
    """
    alias = _alias()
    own = alias != DEFAULT_DB_ALIAS
    channels = hub.running_channels()
    if not channels:
        if own:
            connections[alias].close()
        return True
    if own:
        connections[alias].close_if_unusable_or_obsolete()  # (a dead connection is found before use)
    try:
        poll(renew=renew, channels=channels)
        return True
    except Exception:
        logger.exception("watching running turns failed; retrying")
        if own:
            connections[alias].close()
        return False
    finally:
        if not own:
            connections.close_all()  # give the pooled connection back between passes


def poll(*, renew: bool, channels: list[hub.TurnChannel] | None = None) -> None:
    """One pass: raise the Stop flag on channels whose turn was asked to stop; renew leases if due.
    `channels`: this process's running turns, as the caller has just listed them."""
    if channels is None:
        channels = hub.running_channels()
    if not channels:
        return
    alias = _alias()
    ids = [c.turn_id for c in channels]
    stopped = {
        str(pk) for pk in Turn.objects.using(alias).filter(pk__in=ids, stop_requested=True).values_list("pk", flat=True)
    }
    for channel in channels:
        if channel.turn_id in stopped and not channel.stop:
            channel.request_stop()
    if renew:
        Session.objects.using(alias).filter(turn_id__in=ids).update(
            lease_until=timezone.now() + timedelta(seconds=settings.AGENT_TURN_LEASE_SECONDS)
        )
