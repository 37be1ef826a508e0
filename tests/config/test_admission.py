"""Admission: on an overloaded gevent worker, a new turn waits until the loop keeps time again.

What is asserted is order (who got in while the worker was busy), never a duration.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.urls import resolve

from config import admission

GEVENT_GATE = """
from gevent import monkey; monkey.patch_all()
import time
import django
from django.conf import settings
settings.configure(AGENT_ADMISSION_LAG_MS=20, AGENT_ADMISSION_MAX_WAIT_SECONDS=LONGEST)
import gevent
from config import admission

log = []
busy = {"on": True}

def hog(seconds):
    # CPU in 60 ms slices that never yield inside a slice: the loop lags well past 20 ms.
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        slice_end = time.monotonic() + 0.06
        while time.monotonic() < slice_end:
            pass
        gevent.sleep(0)
    busy["on"] = False

def start(name):
    admission.admit()
    log.append((name, busy["on"]))

admission.admit()  # starts the monitor; nothing is busy yet, so this gets in
gevent.sleep(0.05)
hogging = gevent.spawn(hog, HOG_SECONDS)
gevent.sleep(0.2)  # the monitor has seen the lag
starts = []
for name in ("a", "b", "c"):
    starts.append(gevent.spawn(start, name))
    gevent.sleep(0)
gevent.joinall(starts, timeout=30, raise_error=True)
hogging.kill()
print(log)
"""


def run_gate(hog_seconds: float, max_wait: float) -> list[tuple[str, bool]]:
    root = Path(__file__).resolve().parents[2]
    code = GEVENT_GATE.replace("LONGEST", str(max_wait)).replace("HOG_SECONDS", str(hog_seconds))
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])  # noqa: S307 - our own subprocess's repr of a list


def test_new_turns_wait_while_the_loop_lags_then_start_in_arrival_order():
    assert run_gate(hog_seconds=1.5, max_wait=60) == [("a", False), ("b", False), ("c", False)]


def test_a_start_that_waited_too_long_goes_through_anyway():
    """A message is delayed under load, never refused: past the longest wait it starts regardless."""
    assert run_gate(hog_seconds=20, max_wait=0.3) == [("a", True), ("b", True), ("c", True)]


MONITOR_DIES = """
from gevent import monkey; monkey.patch_all()
from django.conf import settings
settings.configure(AGENT_ADMISSION_LAG_MS=20, AGENT_ADMISSION_MAX_WAIT_SECONDS=60)
from config import admission

import gevent

admission.admit()
admission._state["admitted_at"] = admission._state["ticks"] = -5  # so the next start waits for a tick
waiting = gevent.spawn(admission.admit)
gevent.sleep(0)  # it waits on the current monitor's next tick...
admission._state["monitor"].kill()  # ...which never comes
waiting.join(timeout=10)
assert waiting.dead and waiting.successful(), "a start waited on a dead monitor"
assert not admission._state["monitor"].dead
print("ok")
"""


MONITOR_IDLES = """
from gevent import monkey; monkey.patch_all()
from django.conf import settings
settings.configure(AGENT_ADMISSION_LAG_MS=20, AGENT_ADMISSION_MAX_WAIT_SECONDS=60)
from config import admission

import gevent

admission.IDLE_SECONDS = 0.2
admission.admit()
first = admission._state["monitor"]
gevent.sleep(0.1)
assert not first.dead, "the monitor stopped while starts were still recent"
gevent.sleep(0.5)
assert first.dead and admission._state["monitor"] is None, "an idle worker kept waking 400 times a second"
admission.admit()  # the next start gets in and wakes a new monitor
assert not admission._state["monitor"].dead
print("ok")
"""


def test_the_monitor_stops_on_an_idle_worker_and_the_next_start_wakes_it():
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", MONITOR_IDLES], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_dead_monitor_is_replaced_and_nobody_waits_forever():
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", MONITOR_DIES], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_without_gevent_there_is_no_loop_to_protect():
    assert admission.admit() == 0.0


@pytest.mark.parametrize(
    "path",
    [
        "/api/agent/sessions/00000000-0000-4000-8000-000000000000/messages",
        "/api/agent/sessions/00000000-0000-4000-8000-000000000000/approvals/00000000-0000-4000-8000-000000000001",
        "/chat/00000000-0000-4000-8000-000000000000/send",
        "/chat/00000000-0000-4000-8000-000000000000/approvals/00000000-0000-4000-8000-000000000001",
    ],
)
def test_every_view_that_starts_a_turn_is_gated(path, settings):
    assert resolve(path).view_name in settings.ADMISSION_GATED_VIEWS, path


SEND = "/chat/00000000-0000-4000-8000-000000000000/send"
STOP = "/chat/00000000-0000-4000-8000-000000000000/stop"


def test_only_posts_to_gated_views_start_turns():
    assert admission.starts_turn({"REQUEST_METHOD": "POST", "PATH_INFO": SEND})
    assert not admission.starts_turn({"REQUEST_METHOD": "GET", "PATH_INFO": SEND})
    assert not admission.starts_turn({"REQUEST_METHOD": "POST", "PATH_INFO": STOP})
    assert not admission.starts_turn({"REQUEST_METHOD": "POST", "PATH_INFO": "/no/such/page"})
    assert not admission.starts_turn({"REQUEST_METHOD": "POST"})
    assert not admission.starts_turn({"REQUEST_METHOD": "POST", "PATH_INFO": "/chat/\xff\xfe/send\x00"})


def test_the_served_app_admits_a_new_turn_before_it_takes_a_runner(monkeypatch, fresh_runners):
    """The wait happens in the caller's greenlet (thread here): a message held back holds no runner,
    so no database connection, while it waits; other requests go straight in."""
    from config.wsgi import on_runners

    seen = []
    monkeypatch.setattr(admission, "admit", lambda: seen.append(("admit", threading.get_ident())) or 0.0)

    def app(environ, start_response):
        seen.append((environ["PATH_INFO"], threading.get_ident()))
        start_response("200 OK", [])
        return [b"ok"]

    served = on_runners(app)
    for method, path in (("POST", SEND), ("POST", STOP), ("GET", SEND)):
        assert list(served({"REQUEST_METHOD": method, "PATH_INFO": path}, lambda *a: None)) == [b"ok"]
    here = threading.get_ident()
    assert [what for what, _ in seen] == ["admit", SEND, STOP, SEND]
    assert seen[0][1] == here and all(ident != here for _, ident in seen[1:])


def test_the_operator_hears_once_a_minute_when_new_turns_had_to_wait(caplog, monkeypatch):
    monkeypatch.setattr(admission, "_delays", {"count": 0, "longest": 0.0, "since": 1000.0})
    admission.report(1030.0)  # nothing waited, and not yet a minute
    admission._delays.update(count=3, longest=2.5)
    admission.report(1030.0)
    assert caplog.records == []
    admission.report(1061.0)
    assert [r.getMessage() for r in caplog.records] == [
        "admission: 3 new turns waited for this worker in the last 61 s (longest 2.5 s); "
        "it is short of CPU for its load: add workers or hosts"
    ]
    admission.report(1200.0)  # counts start again after each line
    assert len(caplog.records) == 1
