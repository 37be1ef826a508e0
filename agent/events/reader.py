"""One reader per process: a single connection's blocking `XREAD` over every stream it follows.

Whatever the number of streams open on a worker, it holds one Redis connection for reading: a
greenlet (a thread without gevent) waits on Stop requests, its own wake-up stream, the Streams of
the turns its followers follow and the channels its listeners listen to, and fans each entry out
to in-process copies: a `hub.TurnChannel` per followed turn (event `n` at index `n`, exactly as
the running worker's own channel), a `Subscription` per listener.

A stream newly followed is read whole once (`XRANGE`) and then joins the next `XREAD`; an entry
on the process's wake-up stream makes the blocking read start again with it. If the connection
fails, every copy is marked lost and every listener ends: their streams fall back to the
database; the reader tries again with a growing pause and picks up whatever is followed then.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

import redis
from redis.typing import KeyT, StreamEntry, StreamIdT

from agent import hub, logcontext
from agent.runtime import gevent_patched
from agent.values import TERMINAL, StreamName

logger = logcontext.get_logger("agent.events")

CONTROL = "agent:control"
BLOCK_MS = 5_000
WAKE_TTL = 3_600
CHANNEL_PREFIX = "agent:channel:"


def spawn(target, name: str) -> None:
    """A greenlet under gevent, else a daemon thread."""
    if gevent_patched():
        import gevent

        gevent.spawn(target)
    else:
        threading.Thread(target=target, name=name, daemon=True).start()


@dataclass
class Copy:
    """The in-process copy of a turn running elsewhere, and how far it has been read."""

    channel: hub.TurnChannel
    last_id: str = "0-0"
    followers: int = 1


class Reader:
    def __init__(self, bus: Any) -> None:
        self.bus = bus
        self.copies: dict[str, Copy] = {}  # turn stream key -> its copy
        self.channels: dict[str, str] = {}  # channel stream key -> last id read
        self.control_id: str | None = None  # None: read its last id on (re)connecting
        self.token = uuid.uuid4().hex
        self.wake_key = f"agent:wake:{self.token}"
        self.wake_id = "0-0"
        self.lock = threading.Lock()
        self.started = False

    def ensure_running(self) -> None:
        with self.lock:
            if self.started:
                return
            self.started = True
        spawn(self.run, "agent-events-reader")

    def wake(self) -> None:
        """Make the blocking read start again, with the streams followed now."""
        pipe = self.bus.client.pipeline(transaction=False)
        pipe.xadd(self.wake_key, {"w": "1"}, maxlen=1, approximate=False)
        pipe.expire(self.wake_key, WAKE_TTL)
        pipe.execute()

    # --- followers' side ------------------------------------------------------------------------

    def follow(self, key: str, turn_id: str) -> hub.TurnChannel | None:
        """The copy of a turn's events (a new follower of it), or None when the turn is not on Redis."""
        with self.lock:
            copy = self.copies.get(key)
            if copy is not None and not copy.channel.lost:
                copy.followers += 1
                return copy.channel
        entries = self.bus.client.xrange(key, "-", "+")
        if not entries:
            return None
        copy = Copy(hub.TurnChannel(turn_id))
        with self.lock:
            existing = self.copies.get(key)
            if existing is not None and not existing.channel.lost:  # another follower got here first
                existing.followers += 1
                copy = existing
            else:
                self.copies[key] = copy
            self.apply(copy, entries)
        if not copy.channel.closed:
            self.ensure_running()
            try:
                self.wake()
            except BaseException:  # (the caller follows from the database: this follower never was)
                self.release(key, copy.channel)
                raise
        return copy.channel

    def release(self, key: str, channel: hub.TurnChannel) -> None:
        """A follower of `channel` is done; the copy goes with its last follower. A copy that was
        lost and then followed afresh is another copy: its followers are not counted here."""
        with self.lock:
            copy = self.copies.get(key)
            if copy is not None and copy.channel is channel:
                copy.followers -= 1
                if copy.followers <= 0:
                    del self.copies[key]

    def catch_up(self, key: str, channel: hub.TurnChannel) -> None:
        """Read a followed turn's entries past its copy now, without waiting for the reader."""
        with self.lock:
            copy = self.copies.get(key)
            if copy is None or copy.channel is not channel:
                return
            start = copy.last_id
        entries = self.bus.client.xrange(key, f"({start}", "+")
        with self.lock:
            self.apply(copy, entries)

    def listen(self, key: str) -> None:
        with self.lock:
            known = key in self.channels
        if known:
            return
        last = self.bus.client.xrevrange(key, "+", "-", count=1)
        with self.lock:
            self.channels.setdefault(key, decode(last[0][0]) if last else "0-0")
        self.ensure_running()
        self.wake()

    def unlisten(self, key: str) -> None:
        with self.lock:
            if key[len(CHANNEL_PREFIX) :] not in self.bus.listeners.channels():
                self.channels.pop(key, None)

    # --- the reading greenlet -------------------------------------------------------------------

    def run(self) -> None:
        client = self.bus_connection()
        pause = 0.5
        while True:
            try:
                self.read_once(client)
                pause = 0.5
            except redis.RedisError as exc:
                self.bus.failed("reading events", exc)
                self.lose_everything()
                time.sleep(pause)
                pause = min(pause * 2, 5.0)
            except Exception:
                logger.exception("the event reader failed; it starts again")
                self.lose_everything()
                time.sleep(pause)

    def bus_connection(self) -> redis.Redis:
        from agent.events.redis import connect

        # Named, so an operator's CLIENT LIST shows each process's one reader.
        return connect(self.bus.url, read_timeout=BLOCK_MS / 1000 + 5, name=f"agent-events-reader-{self.token}")

    def read_once(self, client: redis.Redis) -> None:
        if self.control_id is None:
            last = client.xrevrange(CONTROL, "+", "-", count=1)
            self.control_id = decode(_entry_id(last[0])) if last else "0-0"
            self.bus.recovered()
        with self.lock:
            streams: dict[KeyT, StreamIdT] = {CONTROL: self.control_id, self.wake_key: self.wake_id}
            streams.update((key, copy.last_id) for key, copy in self.copies.items() if not copy.channel.closed)
            streams.update(self.channels)
        # RESP2 (`connect`'s protocol): [key, entries] pairs, or None when the block timed out; redis-py's
        # annotation is the union of every protocol's reply shape.
        reply = cast(list[list[Any]] | None, client.xread(streams, block=BLOCK_MS))
        for raw_key, entries in reply or []:
            key = decode(raw_key)
            if not entries:
                continue
            last_id = decode(entries[-1][0])
            with self.lock:
                if key == CONTROL:
                    self.control_id = last_id
                    self.stops(entries)
                elif key == self.wake_key:
                    self.wake_id = last_id
                elif key in self.copies:
                    self.apply(self.copies[key], entries)
                elif key in self.channels:
                    self.channels[key] = last_id
                    name = key[len(CHANNEL_PREFIX) :]
                    for _, fields in entries:
                        self.bus.listeners.deliver(name, json.loads(fields[b"d"]))

    def stops(self, entries: list) -> None:
        for _, fields in entries:
            channel = hub.get_channel(decode(fields.get(b"stop", b"")))
            if channel is not None and not channel.closed:
                channel.request_stop()

    def apply(self, copy: Copy, entries: list) -> None:
        """Add a turn's entries to its copy, each once and in place (called under the lock)."""
        channel = copy.channel
        for raw_id, fields in entries:
            entry_id = decode(raw_id)
            copy.last_id = entry_id
            name = entry_name(fields[b"e"])
            if name == "start" or channel.closed:
                continue
            if name == "lost":
                channel.lost = True
                channel.close()
                continue
            index = int(entry_id.split("-")[1])
            if index < channel.count():
                continue  # already here (a catch-up and the reader both read it)
            while channel.count() < index:  # trimmed away (past AGENT_EVENTS_MAX_LEN): skipped
                channel.publish("heartbeat", None)
            channel.publish(name, json.loads(fields[b"d"]))
            if name in TERMINAL:
                channel.close()

    def lose_everything(self) -> None:
        """The connection failed: copies are lost (their followers use the database), listeners end."""
        with self.lock:
            for copy in self.copies.values():
                if not copy.channel.closed:
                    copy.channel.lost = True
                    copy.channel.close()
            self.copies.clear()
            self.channels.clear()
            self.control_id = None
        self.bus.listeners.end_all()


def _entry_id(entry: StreamEntry) -> bytes | str:
    entry_id = entry[0]
    assert entry_id is not None  # (a stream entry read by its range always has its id)
    return entry_id


def decode(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


# A turn's entry is named `start`, `lost` or for its event (the writer, `agent.events.redis`, writes
# each name from a `StreamName`): `decode` typed so, without a call more per event.
EntryName = StreamName | Literal["start", "lost"]
entry_name = cast("Callable[[bytes | str], EntryName]", decode)
