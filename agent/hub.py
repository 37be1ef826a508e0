"""In-process fan-out of a running turn's events to the streams that follow it.

Tokens never touch the database; a follower in the same process reads them here. A
follower in another process (another worker, another host) follows the turn from the
transcript instead (see `agent.follow`).
"""

from __future__ import annotations

import threading
import time
from typing import Any

LINGER_SECONDS = 30.0

_channels: dict[str, TurnChannel] = {}
_lock = threading.Lock()


class TurnChannel:
    def __init__(self, turn_id: str) -> None:
        self.turn_id = turn_id
        self.events: list[tuple[str, Any]] = []
        self.closed = False
        self.stop = False
        self.delivered = False  # a follower has read it to its end
        self.watched = False  # the process watcher checks its Stop flag and renews its lease
        self.closed_at = 0.0
        self._cond = threading.Condition()

    def publish(self, name: str, payload: Any) -> None:
        with self._cond:
            self.events.append((name, payload))
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self.closed, self.closed_at = True, time.monotonic()
            self._cond.notify_all()

    def wait(self, seen: int, timeout: float) -> bool:
        """Block until there are events past `seen` or the channel closes; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self.events) > seen or self.closed, timeout)


def open_channel(turn_id: str) -> TurnChannel:
    with _lock:
        _sweep()
        channel = _channels[turn_id] = TurnChannel(turn_id)
        return channel


def get_channel(turn_id: str) -> TurnChannel | None:
    return _channels.get(str(turn_id))


def running_channels() -> list[TurnChannel]:
    """Channels of turns this process runs in the background (the watcher looks after them)."""
    return [c for c in list(_channels.values()) if c.watched and not c.closed]


def _sweep() -> None:
    now = time.monotonic()
    for key in [k for k, c in _channels.items() if c.closed and now - c.closed_at > LINGER_SECONDS]:
        del _channels[key]
