"""In-process fan-out of a running turn's events to the streams that follow it.

Tokens never touch the database; a follower in the same process reads them here. A
follower in another process (another worker, another host) follows the turn through the
event bus (`agent.events`: a copy of this channel, filled from Redis) or, on the in-process
bus, from the transcript (see `agent.follow`).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from typing import TYPE_CHECKING, Any, cast

from agent.runtime import gevent_patched
from agent.values import Payload, StreamEvent, StreamName

if TYPE_CHECKING:
    from agent.backends.base import Interrupt
    from agent.events.base import TurnSink
    from agent.streams import Ticket

LINGER_SECONDS = 30.0

_channels: dict[str, TurnChannel] = {}
_closed: deque[tuple[float, str]] = deque()  # (closed at, turn id), in the order channels closed
_lock = threading.Lock()


class TurnChannel:
    """An append-only list of a turn's events, and a wake-up for each follower waiting on it.

    Each waiting follower owns an `Event` (gevent's after monkey patching). A follower registers
    its Event, clears it, then re-checks the list; a publisher appends, then sets the Events
    registered at that moment. So an event appended before the re-check is seen by it, and one
    appended after it sets the Event: no wake-up is lost. This costs a fraction of a
    `Condition`'s notify/wait under gevent, where that goes through a lock per waiter.
    """

    def __init__(self, turn_id: str) -> None:
        self.turn_id = turn_id
        # The events as two parallel lists, names and payloads: a (name, payload) tuple per event
        # would be one more object per token of every open stream for the garbage collector to walk.
        # (Typed each on its own: which payload goes with which name, `StreamEvent` says.)
        self.names: list[StreamName] = []
        self.payloads: list[Payload] = []
        self.closed = False
        self.stop = False
        self.delivered = False  # a follower has read it to its end
        self.watched = False  # the process watcher checks its Stop flag and renews its lease
        self.closed_at = 0.0
        self.lost = False  # a copy of a turn running elsewhere whose events stopped arriving (agent.events)
        self.sink: TurnSink | None = None  # where the running turn's events also go (the bus's)
        self.session: Any = None  # the chat session of a turn running here (a stream with a pass reads it)
        self.on_clock = False  # in `_clocked`: the process's clock looks at its waiters
        self.interrupt: Interrupt | None = None  # a turn running here: cuts its model's read at a Stop
        self._waiters: dict[threading.Event, float] = {}  # each waiting follower's Event and deadline

    def publish(self, name: StreamName, payload: Payload) -> None:
        if self.sink is not None:
            self.sink.publish(len(self.names), name, payload)
        self.payloads.append(payload)
        self.names.append(name)  # last: a follower reads up to len(names)
        self._wake()

    def request_stop(self) -> None:
        """Raise the Stop flag (the loop reads it between events) and cut a model read waiting meanwhile."""
        self.stop = True
        if self.interrupt is not None:
            self.interrupt.fire()

    def count(self) -> int:
        """How many events it has (not `__len__`: an empty channel must stay truthy)."""
        return len(self.names)

    def since(self, seen: int, end: int | None = None) -> list[StreamEvent]:
        """The (name, payload) of every event past the first `seen` (and before `end`)."""
        end = len(self.names) if end is None else min(end, len(self.names))
        return cast("list[StreamEvent]", list(zip(self.names[seen:end], self.payloads[seen:end], strict=True)))

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()
        self.closed, self.closed_at = True, time.monotonic()
        if _channels.get(self.turn_id) is self:  # (a bus's copy of a turn elsewhere is not registered)
            _closed.append((self.closed_at, self.turn_id))
        self._wake()

    def _wake(self) -> None:
        # A snapshot: a follower may (un)register from another thread meanwhile. One that
        # registers after it re-checks the list after our append, so it needs no wake-up.
        for waiter in tuple(self._waiters):
            waiter.set()

    def wait(
        self, seen: int, timeout: float, waiter: threading.Event | None = None, ticket: Ticket | None = None
    ) -> bool:
        """Block until there are events past `seen` or the channel closes; False on timeout.

        A follower that waits again and again passes its own `waiter` to save creating one per call.
        A stream's `ticket` (`agent.streams`) that is superseded sets that waiter: the wait ends, False.
        """
        if len(self.names) > seen or self.closed:
            return True
        if waiter is None:
            waiter = threading.Event()
        deadline = time.monotonic() + timeout
        # Under gevent a wait with a timeout starts and stops a timer each time, once per token;
        # long waits instead let the process's clock (`_clock`) wake them once past their deadline.
        clocked = timeout >= CLOCK_SECONDS and _clock_running()
        if clocked and not self.on_clock:
            _clocked.add(self)
            self.on_clock = True
        self._waiters[waiter] = deadline
        try:
            while True:
                waiter.clear()  # before the re-check: a publish after it sets the Event again
                if len(self.names) > seen or self.closed:
                    return True
                if ticket is not None and ticket.superseded:
                    return False
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                if clocked:
                    waiter.wait()
                elif not waiter.wait(remaining):
                    return len(self.names) > seen or self.closed
                # Set by a publish whose event we had already seen, or by the clock: look again.
        finally:
            self._waiters.pop(waiter, None)


CLOCK_SECONDS = 1.0
_clock_greenlet: Any = None
_clocked: weakref.WeakSet[TurnChannel] = weakref.WeakSet()  # channels with (or once with) clocked waiters


def _clock_running() -> bool:
    """Under gevent, make sure the clock runs; False elsewhere (threads wait with a timeout)."""
    global _clock_greenlet
    if _clock_greenlet is not None and not _clock_greenlet.dead:
        return True
    if not gevent_patched():
        return False
    import gevent

    _clock_greenlet = gevent.spawn(_clock)
    return True


def _clock() -> None:
    """Once a second, wake the followers whose wait is over (they then send a heartbeat)."""
    while True:
        time.sleep(CLOCK_SECONDS)  # gevent's sleep: this only runs under gevent
        now = time.monotonic()
        for channel in list(_clocked):
            for waiter, deadline in list(channel._waiters.items()):
                if deadline <= now:
                    waiter.set()


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
    """Forget channels closed more than `LINGER_SECONDS` ago, oldest first: the work is the
    channels forgotten, not every channel open."""
    now = time.monotonic()
    while _closed and now - _closed[0][0] > LINGER_SECONDS:
        _, key = _closed.popleft()
        channel = _channels.get(key)
        if channel is not None and channel.closed and now - channel.closed_at > LINGER_SECONDS:
            del _channels[key]
