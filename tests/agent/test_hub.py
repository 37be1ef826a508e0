"""The in-process channel: every follower gets every event in order, and no wake-up is lost."""

from __future__ import annotations

import gc
import threading
import time

from agent import hub


def read_all(channel: hub.TurnChannel, out: list, timeout: float = 5.0) -> None:
    """A follower the way `agent.follow` reads: wait, take what is new, until closed and read."""
    seen, waiter = 0, threading.Event()
    while True:
        assert channel.wait(seen, timeout, waiter), "a wake-up was lost"
        new = channel.since(seen)
        out.extend(new)
        seen += len(new)
        if channel.closed and seen >= channel.count():
            return


def test_several_followers_each_get_every_event_in_order():
    channel = hub.TurnChannel("t")
    got = [[] for _ in range(4)]
    readers = [threading.Thread(target=read_all, args=(channel, out)) for out in got]
    for reader in readers:
        reader.start()
    for i in range(500):
        channel.publish("token", {"i": i})
        if i % 50 == 0:
            time.sleep(0.001)  # let followers catch up and wait again
    channel.close()
    for reader in readers:
        reader.join(10)
        assert not reader.is_alive()
    expected = [("token", {"i": i}) for i in range(500)]
    assert all(out == expected for out in got)


def test_no_wake_up_is_lost_when_a_publish_races_the_recheck():
    """Each event is published while the follower is somewhere between its check and its wait."""
    for _ in range(200):
        channel = hub.TurnChannel("t")
        got: list = []
        reader = threading.Thread(target=read_all, args=(channel, got, 2.0))
        reader.start()
        for i in range(5):
            channel.publish("token", i)
        channel.close()
        reader.join(5)
        assert not reader.is_alive()
        assert got == [("token", i) for i in range(5)]


def test_events_add_nothing_for_the_garbage_collector_to_walk():
    """Every open stream keeps its events; a tracked object per token would lengthen every full
    collection (at 1,000 streams, 200 ms pauses that every stream feels)."""
    channel = hub.TurnChannel("t")
    for i in range(2000):
        channel.publish("token", {"text": f"word {i}"})
    reached, frontier = set(), [channel]
    while frontier:  # every object the collector walks from the channel
        obj = frontier.pop()
        if id(obj) in reached or not gc.is_tracked(obj):
            continue
        reached.add(id(obj))
        frontier.extend(o for o in gc.get_referents(obj) if not isinstance(o, type))
    assert len(reached) < 20
    assert channel.since(1998) == [("token", {"text": "word 1998"}), ("token", {"text": "word 1999"})]


def test_a_follower_that_registers_during_a_publish_still_sees_the_event():
    channel = hub.TurnChannel("t")
    results = []

    def follower():
        results.append(channel.wait(0, 2.0))

    threads = [threading.Thread(target=follower) for _ in range(20)]
    for t in threads:
        t.start()
    channel.publish("token", "x")
    for t in threads:
        t.join(5)
    assert results == [True] * 20
    assert not channel._waiters  # every waiter unregistered itself


class RecordingEvent(threading.Event):
    """A follower's waiter that records what each of its waits returned: True when it was set, False
    when it ran out. Evidence of how a wait ended, without timing it."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[bool] = []

    def wait(self, timeout: float | None = None) -> bool:
        woken = super().wait(timeout)
        self.waits.append(woken)
        return woken


def test_wait_returns_false_on_timeout():
    channel = hub.TurnChannel("t")
    waiter = RecordingEvent()
    assert channel.wait(0, 0.05, waiter) is False
    assert waiter.waits == [False]  # it waited, and its wait ran out
    assert not channel._waiters


def test_wait_returns_at_once_when_events_are_already_there():
    channel = hub.TurnChannel("t")
    channel.publish("token", "x")
    assert channel.wait(0, 0) is True
    assert channel.wait(1, 0) is False


def test_a_spurious_set_does_not_end_the_wait_early():
    """A waiter set by an event already read waits on for the next one (or its timeout)."""
    channel = hub.TurnChannel("t")
    channel.publish("token", "a")
    waiter = RecordingEvent()
    waiter.set()
    assert channel.wait(1, 0.05, waiter) is False
    assert waiter.waits == [False]  # the old set did not end it: it waited until its time ran out


def test_close_wakes_every_waiter():
    channel = hub.TurnChannel("t")
    waiters = [RecordingEvent() for _ in range(5)]
    results = []
    threads = [threading.Thread(target=lambda w=w: results.append(channel.wait(0, 60.0, w))) for w in waiters]
    for t in threads:
        t.start()
    while len(channel._waiters) < 5:  # every follower is waiting
        time.sleep(0.01)
    channel.close()
    for t in threads:
        t.join(60)
    assert results == [True] * 5
    # Each was woken by the close (or saw it on its re-check before waiting): none ran out of time.
    assert all(False not in w.waits for w in waiters)
    assert channel.count() == 0


GEVENT_FOLLOWERS = """
from gevent import monkey; monkey.patch_all()
import gevent, threading
from agent import hub

channel = hub.TurnChannel("t")
got = [[] for _ in range(3)]

def follow(out):
    seen, waiter = 0, threading.Event()
    while True:
        assert channel.wait(seen, 5.0, waiter)
        new = channel.since(seen)
        out.extend(new)
        seen += len(new)
        if channel.closed and seen >= channel.count():
            return

def publish():
    for i in range(300):
        channel.publish("token", i)
        if i % 7 == 0:
            gevent.sleep(0)
    channel.close()

assert channel.wait(0, 0.01, threading.Event()) is False
gevent.joinall([gevent.spawn(follow, out) for out in got] + [gevent.spawn(publish)], timeout=10, raise_error=True)
assert all(out == [("token", i) for i in range(300)] for out in got), [len(out) for out in got]
assert hub._clock_greenlet is not None  # those waits were long enough to be clocked

# A long wait with no events is ended by the process's clock (no timer per wait), and says so.
idle = hub.TurnChannel("idle")
waiting = [gevent.spawn(idle.wait, 0, 1.2, threading.Event()) for _ in range(3)]
gevent.joinall(waiting, timeout=8)
assert [g.value for g in waiting] == [False] * 3, "the clock never ended a long wait"
print("ok")
"""


def test_followers_in_greenlets_get_every_event():
    """Production runs turns and streams as greenlets of a monkey-patched process."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", GEVENT_FOLLOWERS], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_closed_channels_are_forgotten_after_lingering_and_open_ones_never(monkeypatch):
    monkeypatch.setattr(hub, "LINGER_SECONDS", 0.0)
    running = hub.open_channel("running-turn")
    finished = hub.open_channel("finished-turn")
    finished.close()
    reopened = hub.open_channel("reopened-turn")
    reopened.close()
    again = hub.open_channel("reopened-turn")  # the same turn followed again: a new, open channel
    time.sleep(0.01)
    hub.open_channel("another-turn")  # each new channel forgets those past their linger
    assert hub.get_channel("finished-turn") is None
    assert hub.get_channel("running-turn") is running
    assert hub.get_channel("reopened-turn") is again
