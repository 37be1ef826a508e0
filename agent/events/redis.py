"""The Redis bus (`AGENT_EVENTS_URL=redis://host:port/db`): every worker and host hears every turn.

Keys (docs/engine.md, "The event bus"):

- `agent:turn:<turn id>`, a Stream per turn. Entry `0-1` marks the start (written before the
  message is answered, so a stream opened anywhere knows the turn is on Redis); event `n` of the
  turn (its SSE id) is entry `1-n`, so `Last-Event-ID: n` resumes with `XRANGE (1-n +`; entry `2-0`
  says the turn's events stopped reaching Redis. Capped at `AGENT_EVENTS_MAX_LEN` entries
  (`XADD MAXLEN ~`), expiring a day after the start and `LINGER_SECONDS` after the end.
- `agent:turn:<turn id>:read`, set (`SET NX`, for `LINGER_SECONDS`) once a follower on any
  process has read the ended turn to its terminal event: a stream first opened after the end, on
  any host, replays the turn from its Stream; one opened again gets its end alone.
- `agent:control`, one Stream of Stop requests for every process.
- `agent:channel:<name>`, a capped Stream per named channel (the blog's effects).

A turn's events go through one writer per process (`Writer`), which sends what has piled up in
one pipelined round trip, so a slow Redis never holds up a turn; one reader per process
(`agent.events.reader`) does a blocking `XREAD` over every stream its streams follow.

Redis may be lost at any time without losing anything durable: a turn that cannot reach it goes
on (its transcript is written as always), and its followers fall back to the database.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from typing import Any
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.typing import EncodableT, FieldT

from agent import hub, logcontext
from agent.conf import settings
from agent.events import reader
from agent.events.base import EventBus, Subscription, TurnSink
from agent.events.reader import CONTROL, spawn
from agent.values import Payload, StreamName

logger = logcontext.get_logger("agent.events")

START_ID, LOST_ID = "0-1", "2-0"
STARTED_TTL = 86_400  # a turn whose worker died leaves nothing behind for long
LINGER_SECONDS = 600  # a finished turn's stream, for a stream reopened with Last-Event-ID
CHANNEL_MAX_LEN = 200
CHANNEL_TTL = 3_600
CONTROL_MAX_LEN = 1_000
DOWN_SECONDS = 2.0  # after a failure, new turns skip Redis this long instead of each waiting on it
BATCH = 500


def turn_key(turn_id: str) -> str:
    return f"agent:turn:{turn_id}"


def read_key(turn_id: str) -> str:
    return f"agent:turn:{turn_id}:read"


def channel_key(name: str) -> str:
    return f"agent:channel:{name}"


def safe_url(url: str) -> str:
    """The URL without its user and password, for logs and messages."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def dumps(payload: Any) -> str:
    return json.dumps(payload, separators=(",", ":"))


def connect(url: str, *, read_timeout: float, name: str | None = None) -> redis.Redis:
    """A client that fails fast: no retries (the bus has its own fallbacks), short connect timeout."""
    return redis.Redis.from_url(
        url, socket_connect_timeout=1.0, socket_timeout=read_timeout, retry=Retry(NoBackoff(), 0), client_name=name
    )


class RedisTurnSink(TurnSink):
    """A running turn's events on their way to its Stream, through the process's writer."""

    def __init__(self, bus: RedisBus, key: str) -> None:
        self.bus, self.key = bus, key
        self.lost = False  # a write failed: later events are not sent (followers use the database)
        self.marked = False  # the `2-0` entry that says so was sent

    def publish(self, index: int, name: StreamName, payload: Payload) -> None:
        if not self.lost:
            self.bus.writer.put((self, f"1-{index}", name, payload))

    def close(self) -> None:
        self.bus.writer.put((self, None, None, None))


QueuedEvent = tuple[
    RedisTurnSink, str | None, StreamName | None, Payload
]  # (sink, entry id, name, payload); the end: (sink, None, None, None)


class Writer:
    """One per process: sends the queued events of every running turn, a pipeline per wake-up."""

    def __init__(self, bus: RedisBus) -> None:
        self.bus = bus
        self.queue: deque[QueuedEvent] = deque()
        self.ready = threading.Event()
        self.started = False
        self.lock = threading.Lock()

    def put(self, item: QueuedEvent) -> None:
        self.queue.append(item)
        self.ready.set()
        if not self.started:
            self.start()

    def start(self) -> None:
        with self.lock:
            if self.started:
                return
            self.started = True
        spawn(self.run, "agent-events-writer")

    def run(self) -> None:
        while True:
            self.ready.wait()
            self.ready.clear()
            while self.queue:
                batch = [self.queue.popleft() for _ in range(min(BATCH, len(self.queue)))]
                try:
                    self.flush(batch)
                except Exception:
                    logger.exception("the event writer failed; its turns go on without Redis")
                    for sink, *_ in batch:
                        sink.lost = True

    def flush(self, batch: list[QueuedEvent]) -> None:
        pipe = self.bus.client.pipeline(transaction=False)
        max_len = settings.AGENT_EVENTS_MAX_LEN
        events: list[RedisTurnSink | None] = []  # whose event each command of the pipeline adds, if any
        for sink, entry_id, name, payload in batch:
            if entry_id is not None:
                assert name is not None  # (an event's item has its id and its name; the end's has neither)
                if not sink.lost:
                    # Never into a stream that is not there: Redis restarted empty meanwhile, and a
                    # stream without its start would look whole to a follower while missing its head.
                    fields: dict[FieldT, EncodableT] = {"e": name, "d": dumps(payload)}
                    pipe.xadd(sink.key, fields, id=entry_id, maxlen=max_len, nomkstream=True)
                    events.append(sink)
                continue
            if sink.lost and self.mark_lost(pipe, sink):  # its followers go to the database
                events.append(None)
            pipe.expire(sink.key, LINGER_SECONDS)  # and the stream goes
            events.append(None)
        if not len(pipe):
            return
        try:
            results = pipe.execute(raise_on_error=False)
        except redis.RedisError as exc:
            self.bus.failed("sending a turn's events", exc)
            for sink, *_ in batch:
                sink.lost = True
            return
        gone: list[RedisTurnSink] = []
        for added_by, result in zip(events, results, strict=True):
            if isinstance(result, Exception):  # e.g. a duplicate entry id: nothing to repair
                logger.warning("Redis refused a turn event: %s", result)
            elif added_by is not None and result is None and not added_by.lost:  # (its stream is not there)
                added_by.lost = True
                gone.append(added_by)
        if gone:
            logger.warning("Redis lost the events of %d running turn(s) (restarted?); they go on without it", len(gone))
            pipe = self.bus.client.pipeline(transaction=False)
            for sink in gone:
                self.mark_lost(pipe, sink)
            with contextlib.suppress(redis.RedisError):  # (then its followers find no stream: the database too)
                pipe.execute(raise_on_error=False)

    @staticmethod
    def mark_lost(pipe: Any, sink: RedisTurnSink) -> bool:
        """Add the `2-0` entry that sends a turn's followers to the database, once per turn (True then)."""
        if sink.marked:
            return False
        sink.marked = True
        pipe.xadd(sink.key, {"e": "lost"}, id=LOST_ID)
        return True


class RedisBus(EventBus):
    """Turn events, Stop and named channels on Redis (redis-py; cooperative under gevent)."""

    def __init__(self, url: str = "") -> None:
        super().__init__(url)
        self.safe_url = safe_url(url)
        self.client = connect(url, read_timeout=5.0)
        self.writer = Writer(self)
        self.reader = reader.Reader(self)
        self.down_until = 0.0
        self.warned = False

    # --- health -----------------------------------------------------------------------------

    def failed(self, what: str, exc: Exception) -> None:
        """Log a failure once per outage, without the URL's credentials; new turns skip Redis a moment."""
        self.down_until = time.monotonic() + DOWN_SECONDS
        if not self.warned:
            self.warned = True
            logger.warning(
                "Redis at %s failed while %s (%s); turns go on and streams follow from the database",
                self.safe_url,
                what,
                type(exc).__name__,
            )

    def recovered(self) -> None:
        self.down_until = 0.0
        if self.warned:
            self.warned = False
            logger.info("Redis at %s answers again", self.safe_url)

    def check(self) -> list[str]:
        try:
            self.client.ping()
        except redis.AuthenticationError:  # (it answers: the server to look at is up)
            return [
                f"The Redis server of AGENT_EVENTS_URL ({self.safe_url}) refuses its user or password: streams on "
                "other workers fall back to the database until it accepts them."
            ]
        except redis.RedisError:
            return [
                f"The Redis server of AGENT_EVENTS_URL ({self.safe_url}) does not answer: streams on other "
                "workers fall back to the database until it does."
            ]
        return []

    # --- turns ------------------------------------------------------------------------------

    def open_turn(self, turn_id: str) -> TurnSink:
        if time.monotonic() < self.down_until:
            return TurnSink()
        key = turn_key(turn_id)
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.xadd(key, {"e": "start"}, id=START_ID)
            pipe.expire(key, STARTED_TTL)
            pipe.execute()
        except redis.RedisError as exc:
            self.failed("starting a turn", exc)
            return TurnSink()
        self.recovered()
        self.reader.ensure_running()  # this process now hears Stop requests for its turns
        return RedisTurnSink(self, key)

    def follow_turn(self, turn_id: str) -> hub.TurnChannel | None:
        try:
            return self.reader.follow(turn_key(turn_id), turn_id)
        except redis.RedisError as exc:
            self.failed("following a turn", exc)
            return None

    def release(self, channel: hub.TurnChannel) -> None:
        self.reader.release(turn_key(channel.turn_id), channel)

    def mark_read(self, turn_id: str) -> None:
        if time.monotonic() < self.down_until:
            return  # (Redis just failed: not another wait on it; each process keeps its own mark)
        try:
            # No longer than the turn's Stream is kept after its end: without the Stream there is
            # nothing to replay, and a stream opened then gets the turn's end in any case.
            self.client.set(read_key(turn_id), "1", nx=True, ex=LINGER_SECONDS)
        except redis.RedisError as exc:
            self.failed("marking a turn read", exc)

    def was_read(self, turn_id: str) -> bool:
        if time.monotonic() < self.down_until:
            return False
        try:
            return bool(self.client.exists(read_key(turn_id)))
        except redis.RedisError as exc:
            self.failed("reading a turn's mark", exc)
            return False

    def catch_up(self, channel: hub.TurnChannel) -> None:
        try:
            self.reader.catch_up(turn_key(channel.turn_id), channel)
        except redis.RedisError as exc:
            self.failed("reading a turn", exc)

    def request_stop(self, turn_id: str) -> None:
        try:
            self.client.xadd(CONTROL, {"stop": turn_id}, maxlen=CONTROL_MAX_LEN)
        except redis.RedisError as exc:
            self.failed("sending a Stop", exc)  # the database flag still stops it, a moment later

    # --- named channels -----------------------------------------------------------------------

    def publish(self, channel: str, message: Any) -> None:
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.xadd(channel_key(channel), {"d": dumps(message)}, maxlen=CHANNEL_MAX_LEN)
            pipe.expire(channel_key(channel), CHANNEL_TTL)
            pipe.execute()
        except redis.RedisError as exc:
            self.failed("publishing on a channel", exc)
            self.listeners.deliver(channel, message)  # this process's listeners at least

    def subscribe(self, channel: str, *more: str) -> Subscription:
        subscription = self.listeners.add(channel, *more)
        try:
            for name in subscription.channels:
                self.reader.listen(channel_key(name))
        except redis.RedisError as exc:
            self.failed("listening on a channel", exc)
            subscription.end()  # the listener ends; its page connects again later
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self.listeners.remove(subscription)
        for name in subscription.channels:
            self.reader.unlisten(channel_key(name))
