# Patch before anything imports sockets or psycopg: psycopg picks its wait function at import
# time.
from gevent import monkey

monkey.patch_all()

import gc  # noqa: E402
import io  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import gevent  # noqa: E402

from config.serve import bind_from_env, count_from_env  # noqa: E402

# Each greenlet would otherwise keep the stack it was spawned from (for gevent's debugging
# tree): thousands of frames for the collector to walk, at a thousand open streams.
gevent.config.track_greenlet_tree = False

# The cyclic garbage collector, tuned for a worker holding many streams open: with Python's
# defaults a full collection comes every few seconds under load and pauses the whole worker, a
# stall every open stream feels. Younger collections 10x rarer let most short-lived request
# garbage die by reference count first; full collections become rare.
GC_THRESHOLDS = (10_000, 20, 20)

bind = bind_from_env(os.environ)
worker_class = "gevent"
# (Run as `python -m config.serve`, which reads WEB_CONCURRENCY before gunicorn does; read again here for
# a plain `gunicorn -c`, where 0 would start a master that serves nothing.)
workers = count_from_env(os.environ, "WEB_CONCURRENCY", 1, what="worker processes")
worker_connections = count_from_env(os.environ, "WORKER_CONNECTIONS", 4000, what="connections per worker")
timeout = 120
graceful_timeout = 20
keepalive = 5
accesslog = os.environ.get("ACCESS_LOG", None)
errorlog = "-"
control_socket_disable = True
# Who may say a request came over HTTPS (`X-Forwarded-Proto: https`): the TLS-terminating proxy's
# addresses, comma-separated, CIDR allowed. From any other address the header is ignored, so a
# client talking to gunicorn directly cannot pass plain HTTP off as HTTPS. Django reads the
# scheme gunicorn settled on (settings.py sets no SECURE_PROXY_SSL_HEADER).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS") or "127.0.0.1,::1"


def post_fork(server, worker):
    """Hold back the warnings the worker's loading of the app raises (`hold_warnings`)."""
    hold_warnings(worker)


def hold_warnings(worker):
    """Keep each warning raised from now on as one line, until `release_warnings`; said in the log
    (`say_warnings`) once the system checks have passed, or dropped when they stop the worker.

    WhiteNoise warns `No directory at: …/staticfiles/` as the app loads, which is before the checks
    run: with static files not collected the log began with that warning and the line of Django's
    source it was attributed to, then the check's own sentence saying what to do (`config.E001`).
    (`warnings.showwarning` is the documented place to send warnings elsewhere.)
    """
    worker.held_warnings = []
    worker.showwarning = warnings.showwarning

    def hold(message, category, filename, lineno, file=None, line=None):
        worker.held_warnings.append(f"{category.__name__}: {message}")

    warnings.showwarning = hold


def release_warnings(worker) -> list[str]:
    """Warnings are shown as before; what was held, once (nothing if nothing was held)."""
    held = getattr(worker, "held_warnings", None)
    if held is None:
        return []
    warnings.showwarning = worker.showwarning
    worker.held_warnings = None
    return held


def say_warnings(worker, held: list[str]) -> None:
    for line in held:
        worker.log.warning("%s", line)


def post_worker_init(worker):
    """Refuse to serve a misconfigured site (`run_system_checks`), and only then say the warnings
    held while the app loaded (`hold_warnings`); tune the collector (above) and
    leave what the loaded app holds out of every collection; on SQLite, hold one connection for the
    worker's life; end the pages' live streams when the worker is told to stop
    (`end_live_streams_on_term`).

    Closing a database's last connection makes SQLite checkpoint and remove its WAL, a file sync
    that stalls every greenlet of the worker; with this one open, other closes are cheap.
    """
    import sqlite3

    from django.conf import settings

    held = release_warnings(worker)
    run_system_checks(worker)
    say_warnings(worker, held)
    gc.set_threshold(*GC_THRESHOLDS)
    gc.freeze()

    db = settings.DATABASES["default"]
    if db["ENGINE"] == "django.db.backends.sqlite3" and str(db["NAME"]) != ":memory:":
        worker.sqlite_anchor = sqlite3.connect(str(db["NAME"]), check_same_thread=False)
        # (a connection opens the database's WAL only at its first read: make one, or it holds nothing)
        worker.sqlite_anchor.execute("SELECT count(*) FROM sqlite_master").fetchone()
    end_live_streams_on_term(worker.cfg.graceful_timeout)


def run_system_checks(worker):
    """Django's system checks, as `manage.py check` runs them: an error stops the worker's boot, and
    with it gunicorn, saying the check's one sentence; a warning goes to the log.

    gunicorn runs none of its own: an unknown AGENT_BACKEND served every page and failed every
    first message, on a host started without `migrate` (which runs them) in its own environment.
    The checks' report is all the error log says: left to propagate, the error came after gunicorn's
    traceback of the hook, and twice.
    """
    from django.apps import apps
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError
    from gunicorn.arbiter import Arbiter

    if not apps.ready:  # (the app served is not Django's: bench/bare_app.py runs with this file too)
        return
    try:
        call_command("check", stdout=io.StringIO())  # (not its "no issues" line at every worker's boot)
    except SystemCheckError as e:
        worker.log.error("%s", e)
        sys.exit(Arbiter.WORKER_BOOT_ERROR)  # the master stops too: "Worker failed to boot."


def end_live_streams_on_term(grace: float):
    """On SIGTERM (a graceful stop: a deploy, a restart, `kill`, a HUP's old workers) end the live
    streams of open pages (`agent.events.shut_down`) as well as doing what gunicorn does.

    gunicorn stops taking connections and waits up to `graceful_timeout` for the open ones to
    finish. A blog page listens for changes for as long as it is open, so one open page kept the
    worker for the whole 20 s and then lost its stream mid-chunk. Ended here, those streams close
    cleanly, the pages connect again to a worker that stays, and the worker exits as soon as its
    running turns have finished (their streams are left to end with them): a turn that would outlast
    the grace is asked to stop in time (`stop_turns_in_time`), while gunicorn still drains.
    """
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum, frame):
        global _term_at
        if _term_at is None:
            _term_at = time.monotonic()
            gevent.spawn(stop_turns_in_time, _term_at, grace)
        if callable(previous):
            previous(signum, frame)  # gunicorn's own: stop taking connections, then drain
        gevent.spawn(_shut_down_events)  # not in the handler: it may run inside any greenlet

    signal.signal(signal.SIGTERM, on_term)


def _shut_down_events():
    from agent import events

    events.shut_down()


# When the worker was told to stop (SIGTERM); the master kills it `graceful_timeout` later.
_term_at = None
# Of that time, what is kept back: for turns asked to stop to reach their end, then to exit.
STOP_TURNS_BEFORE = 4.0
EXIT_BEFORE = 1.0


def stop_turns_in_time(since: float, grace: float) -> None:
    """Ask the turns still running `STOP_TURNS_BEFORE` the grace ends to stop, while gunicorn drains.

    A stream open on this worker holds gunicorn's drain of its connections until the turn it follows
    ends, and `worker_exit` runs only after that drain: left to it, such a turn was asked to stop only
    once the grace was over and its stream cut, so it stayed `running`, holding the chat, and what it
    wrote was lost. Stopped here, it ends as "stopped", its stream ends with its terminal event, and the
    drain finishes.
    """
    from agent import hub

    gevent.sleep(max(0.0, since + grace - STOP_TURNS_BEFORE - time.monotonic()))
    for channel in hub.running_channels():
        channel.request_stop()


def worker_exit(server, worker):
    """Let the worker's running turns end before it exits (`end_running_turns`); a worker that failed
    to load the app still says the warnings it held (they may tell why)."""
    say_warnings(worker, release_warnings(worker))
    end_running_turns(_term_at if _term_at is not None else time.monotonic(), worker.cfg.graceful_timeout)


def end_running_turns(since: float, grace: float) -> None:
    """Wait for this worker's running turns, then stop those still running, before the grace ends.

    gunicorn's gevent worker drains its open connections, not the turns: a turn runs in a greenlet
    of its own, so one that nobody is streaming from this worker (the tab was closed; with Redis,
    the stream is on another host) was cut when the worker exited: its lease held the chat ("still
    answering") until it ran out, and what it had written was lost. Waited for here, it ends as it
    would have; one that would outlast the grace is asked to stop in time to end as "stopped",
    keeping what was streamed and giving the chat back.
    """
    from agent import hub

    stop_at, exit_at = since + grace - STOP_TURNS_BEFORE, since + grace - EXIT_BEFORE
    while hub.running_channels() and time.monotonic() < stop_at:
        gevent.sleep(0.1)
    for channel in hub.running_channels():
        channel.request_stop()  # (a model's read is cut too: a silent one ends at once)
    while hub.running_channels() and time.monotonic() < exit_at:
        gevent.sleep(0.1)
