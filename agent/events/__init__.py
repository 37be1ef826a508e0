"""The turn-event bus, chosen by a setting like Django's cache and email backends (docs/engine.md,
"The event bus").

`AGENT_EVENTS_BACKEND` names the class (default: `agent.events.redis.RedisBus` when
`AGENT_EVENTS_URL` is set, else `agent.events.local.LocalBus`); it is read at call time and one
instance is kept per backend and URL.

```python
from agent import events
events.publish("blog:7", [{"type": "post.created", "id": 12}])   # never raises
subscription = events.subscribe("blog:7")
messages = subscription.wait(15.0)   # [] after 15 s of silence, or when the subscription ended
events.unsubscribe(subscription)
```

When the process is about to stop (a server's graceful shutdown), `shut_down()` ends every
listener, and any that subscribes later at once: their streams close and their pages connect
again, to a worker that stays, instead of holding this one open until it is killed.
"""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from agent.events.base import EventBus, Subscription, TurnSink

__all__ = ["EventBus", "Subscription", "TurnSink", "get_bus", "publish", "shut_down", "subscribe", "unsubscribe"]

_buses: dict[tuple[str, str], EventBus] = {}
_lock = threading.Lock()
_shutting_down = threading.Event()


def backend_path() -> str:
    url = getattr(settings, "AGENT_EVENTS_URL", "")
    default = "agent.events.redis.RedisBus" if url else "agent.events.local.LocalBus"
    return getattr(settings, "AGENT_EVENTS_BACKEND", "") or default


def get_bus() -> EventBus:
    """The configured bus (one instance per backend class and URL, for the process's life)."""
    path, url = backend_path(), getattr(settings, "AGENT_EVENTS_URL", "")
    bus = _buses.get((path, url))
    if bus is None:
        with _lock:
            bus = _buses.get((path, url))
            if bus is None:
                cls = import_string(path)
                bus = _buses[(path, url)] = cls(url)
    return bus


def publish(channel: str, message: Any) -> None:
    """Send `message` (JSON-able) to every listener of `channel`, on any worker the bus reaches."""
    get_bus().publish(channel, message)


def subscribe(channel: str, *more: str) -> Subscription:
    """A listener on `channel` (and on each of `more`, in the same subscription); once the process is
    shutting down, one that has already ended."""
    if _shutting_down.is_set():
        subscription = Subscription(channel, *more)
        subscription.end()
        return subscription
    return get_bus().subscribe(channel, *more)


def unsubscribe(subscription: Subscription) -> None:
    get_bus().unsubscribe(subscription)


def shut_down() -> None:
    """The process is stopping: every listener of every bus ends now, and every later one at once.

    Running turns and the streams that follow them are not touched: they end when their turn does.
    Safe to call from a signal handler's greenlet, and more than once.
    """
    _shutting_down.set()
    with _lock:
        buses = list(_buses.values())
    for bus in buses:
        bus.listeners.end_all()
