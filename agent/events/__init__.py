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
"""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from agent.events.base import EventBus, Subscription, TurnSink

__all__ = ["EventBus", "Subscription", "TurnSink", "get_bus", "publish", "subscribe", "unsubscribe"]

_buses: dict[tuple[str, str], EventBus] = {}
_lock = threading.Lock()


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


def subscribe(channel: str) -> Subscription:
    return get_bus().subscribe(channel)


def unsubscribe(subscription: Subscription) -> None:
    get_bus().unsubscribe(subscription)
