"""Background turns run in runners that keep their database connection from one turn to the next."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections

from agent import runners

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_runners")]


def run_and_wait(function, *args):
    done = threading.Event()

    def job():
        try:
            function(*args)
        finally:
            done.set()

    runners.submit(job)
    assert done.wait(10)


def wait_until(condition, seconds=5.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def where_am_i(seen):
    with connection.cursor() as cursor:  # opens this thread's connection
        cursor.execute("SELECT 1")
    seen.append((threading.get_ident(), connection.connection))


def test_the_next_turn_runs_in_the_same_runner_with_the_same_open_connection():
    seen = []
    run_and_wait(where_am_i, seen)
    wait_until(lambda: runners.idle_count() == 1)
    run_and_wait(where_am_i, seen)
    (first_thread, first_db), (second_thread, second_db) = seen
    assert second_thread == first_thread and second_db is first_db


def test_turns_at_the_same_time_run_in_runners_of_their_own():
    started, release, threads = threading.Barrier(3), threading.Event(), []

    def turn():
        threads.append(threading.get_ident())
        started.wait(5)
        release.wait(5)

    for _ in range(2):
        runners.submit(turn)
    started.wait(5)
    assert len(set(threads)) == 2
    release.set()
    wait_until(lambda: runners.idle_count() == 2)


def test_an_idle_runner_ends_and_closes_its_connection(monkeypatch):
    monkeypatch.setattr(runners, "IDLE_SECONDS", 0.05)
    seen, wrapper = [], []

    def turn():
        where_am_i(seen)
        wrapper.append(connections["default"])  # (the runner's own, not the proxy `connection`)

    run_and_wait(turn)
    wait_until(lambda: runners.idle_count() == 0)
    wait_until(lambda: wrapper[0].connection is None)


def test_no_more_than_max_idle_runners_wait(monkeypatch):
    monkeypatch.setattr(runners, "MAX_IDLE", 1)
    release = threading.Event()
    for _ in range(3):
        runners.submit(release.wait, 5)
    release.set()
    time.sleep(0.2)
    assert runners.idle_count() == 1


def test_a_turn_that_raises_leaves_the_runner_serving(caplog):
    def broken():
        raise RuntimeError("a bug")

    run_and_wait(broken)
    wait_until(lambda: runners.idle_count() == 1)
    seen = []
    run_and_wait(where_am_i, seen)
    assert seen and "a job failed in a runner" in caplog.text


def test_a_waiting_runner_holds_nothing_of_the_turn_it_ran():
    import gc
    import weakref

    class Turn:
        pass

    turn = Turn()
    left = weakref.ref(turn)
    run_and_wait(lambda t: None, turn)
    wait_until(lambda: runners.idle_count() == 1)
    del turn
    gc.collect()
    assert left() is None


def test_call_returns_what_the_function_returns_in_a_runner():
    assert runners.call(lambda a, b: (a + b, threading.get_ident()), 2, 3)[0] == 5
    assert runners.call(threading.get_ident) != threading.get_ident()


def test_call_raises_what_the_function_raises_and_the_runner_serves_on():
    def broken():
        raise LookupError("not there")

    with pytest.raises(LookupError, match="not there"):
        runners.call(broken)
    wait_until(lambda: runners.idle_count() == 1)
    assert runners.call(lambda: 42) == 42


def test_each_job_runs_in_a_fresh_context():
    import contextvars

    var = contextvars.ContextVar("left_by_a_job", default="nothing")
    first = runners.call(lambda: (var.set("left"), threading.get_ident())[1])
    wait_until(lambda: runners.idle_count() == 1)
    assert runners.call(lambda: (var.get(), threading.get_ident())) == ("nothing", first)
