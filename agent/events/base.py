"""The turn-event bus's interface (docs/engine.md, "The event bus"), and what every backend shares.

A backend carries three things between processes: a running turn's events (so a stream opened on
any worker or host follows it token by token and resumes after `Last-Event-ID`), Stop, and
messages on named channels (the domain's per-blog effects). The running turn always publishes to
its in-process channel (`agent.hub`) first; a bus adds what crosses the process.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any

from agent import hub
from agent.values import Payload, StreamName


class TurnSink:
    """Where a running turn's events go beyond its process. This one goes nowhere (one process)."""

    def publish(self, index: int, name: StreamName, payload: Payload) -> None:
        """Event `index` (0-based in the turn, its SSE id) was published."""

    def close(self) -> None:
        """The turn ended (its terminal event was published) or was given up."""


class Subscription:
    """A listener on a named channel, or on several: messages arrive in order (each channel's in its
    own order, the channels' interleaved as they arrive); `wait` hands over what has arrived."""

    def __init__(self, channel: str, *more: str) -> None:
        self.channel = channel
        self.channels = (channel, *more)
        self.closed = False  # the bus lost the channel (Redis went away) or the process is stopping: end
        self.messages: deque[Any] = deque()
        self.ready = threading.Event()  # gevent's after monkey patching

    def deliver(self, message: Any) -> None:
        self.messages.append(message)
        self.ready.set()

    def end(self) -> None:
        self.closed = True
        self.ready.set()

    def wait(self, timeout: float) -> list[Any]:
        """The messages that arrived, waiting up to `timeout` seconds for one; [] on timeout or end."""
        deadline = time.monotonic() + timeout
        while not self.messages and not self.closed:
            self.ready.clear()
            if self.messages or self.closed:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self.ready.wait(remaining):
                break
        taken = []
        while self.messages:
            taken.append(self.messages.popleft())
        return taken


class EventBus:
    """A backend. Subclasses override what they carry across processes; this base carries nothing.

    - `open_turn(turn_id)`: before a turn starts (and before its stream URL is answered); returns
      the `TurnSink` its events go to.
    - `follow_turn(turn_id)`: for a stream whose turn runs elsewhere: a `hub.TurnChannel` filled as
      the turn's events arrive (event `n` at index `n`), or None to follow from the transcript.
      Give it back with `release(channel)` when the stream ends.
    - `mark_read(turn_id)` / `was_read(turn_id)`: a follower read the ended turn to its terminal
      event, on any process the bus reaches (a stream first opened after the end gets the whole
      turn, one opened again its end alone). This base knows of no process but its own: never read.
    - `request_stop(turn_id)`: tell the process running the turn (the database flag is the record).
    - `publish(channel, message)` / `subscribe(channel, *more)` / `unsubscribe(subscription)`: named
      channels of JSON-able messages, for whoever listens on any worker (one subscription may hear
      several channels). `publish` never raises.
    - `check()`: sentences for `manage.py check`.
    """

    def __init__(self, url: str = "") -> None:
        self.url = url
        self.listeners = Listeners()

    def open_turn(self, turn_id: str) -> TurnSink:
        return TurnSink()

    def follow_turn(self, turn_id: str) -> hub.TurnChannel | None:
        return None

    def release(self, channel: hub.TurnChannel) -> None:
        pass

    def mark_read(self, turn_id: str) -> None:
        """A follower here read the turn to its terminal event. Never raises."""

    def was_read(self, turn_id: str) -> bool:
        """Whether a follower, on any process the bus reaches, read the turn to its terminal event;
        False when the bus cannot tell (each process then knows only of its own followers)."""
        return False

    def catch_up(self, channel: hub.TurnChannel) -> None:
        """Read what the turn published that has not arrived yet (the turn has ended)."""

    def request_stop(self, turn_id: str) -> None:
        pass

    def publish(self, channel: str, message: Any) -> None:
        self.listeners.deliver(channel, message)

    def subscribe(self, channel: str, *more: str) -> Subscription:
        return self.listeners.add(channel, *more)

    def unsubscribe(self, subscription: Subscription) -> None:
        self.listeners.remove(subscription)

    def check(self) -> list[str]:
        return []


# --- in-process listeners of named channels (each bus has its own) -----------------------------


class Listeners:
    """The subscriptions of this process, by channel name."""

    def __init__(self) -> None:
        self.by_channel: dict[str, set[Subscription]] = {}
        self.lock = threading.Lock()

    def add(self, channel: str, *more: str) -> Subscription:
        subscription = Subscription(channel, *more)
        with self.lock:
            for name in subscription.channels:
                self.by_channel.setdefault(name, set()).add(subscription)
        return subscription

    def remove(self, subscription: Subscription) -> None:
        with self.lock:
            for name in subscription.channels:
                listeners = self.by_channel.get(name)
                if listeners is not None:
                    listeners.discard(subscription)
                    if not listeners:
                        del self.by_channel[name]

    def deliver(self, channel: str, message: Any) -> None:
        for subscription in tuple(self.by_channel.get(channel, ())):
            subscription.deliver(message)

    def channels(self) -> list[str]:
        return list(self.by_channel)

    def end_all(self) -> None:
        """Every listener ends (its stream closes and its client connects again)."""
        for listeners in list(self.by_channel.values()):
            for subscription in tuple(listeners):
                subscription.end()
