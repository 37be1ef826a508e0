"""What one turn costs the worker, without the network: for A/B of a change on a noisy host.

    python -m bench.turncost                  # CPU ms per turn (POST + stream), SQL statements per turn
    python -m bench.turncost --callgrind      # instructions per turn, counted by valgrind
    python -m bench.turncost --budgets        # with the budget caps and the rate limit at their defaults
    python -m bench.turncost --html           # the browser's stream (`?flavour=html`) instead of JSON
    python -m bench.turncost --pg             # on PostgreSQL (a database made for the run, then dropped)

The worker's WSGI application is called directly, under gevent as in gunicorn's worker: POST a
message, then GET its stream to `done`.
The fake backend answers each turn with `--tokens` tokens and no pacing, so a turn's cost is
almost all its start. SQLite (or `--pg`: PostgreSQL on 127.0.0.1:5432, as `make bench`), production
settings, budgets and rate limit off (as `make bench`).

CPU time on a shared host spreads widely from run to run (`make bench` therefore measures the
baseline and this tree in alternating rounds of one run). `--callgrind` counts instructions instead: it runs the loop under
valgrind with `--turns` and with twice as many sessions and divides the difference of the two
totals by the extra turns, so start-up and warm-up cancel out (~1% between runs of one commit).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import PG_BASE, RESULTS, ROOT, server_env, write_script

WARM = 20  # turns before measuring: imports, URL resolvers, first connections


# `--budgets`: the budget caps and the message rate limit at their defaults (config/settings.py),
# as a deployment runs by default.
DEFAULT_CAPS = {
    "AGENT_MESSAGES_PER_MINUTE": "20",
    "AGENT_BUDGET_TOKENS_PER_MINUTE": "20000",
    "AGENT_BUDGET_TOKENS_PER_HOUR": "200000",
    "AGENT_BUDGET_USD_PER_MONTH": "5",
    "AGENT_BUDGET_GLOBAL_USD_PER_MONTH": "100",
}


def _env(tokens: int) -> dict[str, str]:
    pg_db = os.environ.get("BENCH_PG_DB")  # set by --pg, inherited by the measuring process
    url = f"{PG_BASE}/{pg_db}" if pg_db else f"sqlite:///{RESULTS / 'turncost.sqlite3'}"
    env = server_env(url, write_script(tokens, 0))
    if os.environ.get("BENCH_BUDGETS") == "1":  # set by --budgets, inherited by the measuring process
        env.update(DEFAULT_CAPS)
    return env


def prepare(tokens: int, sessions: int) -> Path:
    """The database (migrated once) and `sessions` fresh chats, each with its user signed in."""
    from bench.streams import migrate, setup_sessions

    RESULTS.mkdir(parents=True, exist_ok=True)
    env = _env(tokens)
    migrate(env)  # (a no-op when the schema is current)
    return setup_sessions(env, sessions, "turncost")


def prepare_rounds(tokens: int, turns: int, rounds: int) -> list[str]:
    """Manifests for `rounds` measuring runs of `turns` turns each (`bench.run` alternates them
    with another tree's): fresh chats for every run."""
    manifest = prepare(tokens, rounds * (WARM + 1 + turns))
    rows = json.loads(manifest.read_text())
    per = WARM + 1 + turns
    paths = []
    for r in range(rounds):
        path = manifest.with_name(f"{manifest.stem}.{r}.json")
        path.write_text(json.dumps(rows[r * per : (r + 1) * per]))
        paths.append(str(path))
    return paths


def measure(manifest: Path, tokens: int) -> dict:
    """Run every chat of `manifest` through one turn in this process (patched by gevent before
    anything was imported: `measuring`); the first WARM are not counted."""
    os.environ.update(_env(tokens))
    import gc
    import io

    import django
    import gevent

    django.setup()
    gc.set_threshold(10_000, 20, 20)  # as config/gunicorn.conf.py
    gc.freeze()
    from django.core.wsgi import get_wsgi_application
    from django.db import connection

    from config.wsgi import application as served  # what gunicorn serves (the tree's own wrapping)

    plain = get_wsgi_application()  # (counting statements: in the calling greenlet, on its connection)
    anchor = _sqlite_anchor()

    def call(app, method: str, path: str, headers: dict, body: bytes = b"", query: str = "") -> tuple[str, bytes]:
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "HTTP_HOST": "127.0.0.1",
            "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.url_scheme": "http",
            "wsgi.version": (1, 0),
            "wsgi.multithread": False,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
            **headers,
        }
        status: list[str] = []
        out = app(environ, lambda s, h, e=None: status.append(s))
        try:
            return status[0], b"".join(out)
        finally:
            out.close()

    def turn(row: dict, wrapper: Any = None) -> None:
        # In a greenlet of its own, as gunicorn's gevent worker serves each client connection: the
        # POST and then the stream on one keep-alive connection (as `bench/client.py` and browsers do).
        gevent.spawn(client_connection, row, wrapper).get()

    def client_connection(row: dict, wrapper: Any) -> None:
        if wrapper is None:
            requests(row, served)
            return
        with connection.execute_wrapper(wrapper):  # (this greenlet's connection: Django's are per greenlet)
            requests(row, plain)

    def requests(row: dict, app: Any) -> None:
        body = json.dumps({"text": "Write me something."}).encode()
        headers = {"CONTENT_TYPE": "application/json", "HTTP_COOKIE": row["cookie"], "HTTP_X_CSRFTOKEN": row["csrf"]}
        status, out = call(app, "POST", f"/api/agent/sessions/{row['session']}/messages", headers, body)
        assert status.startswith("202"), (status, out[:300])
        query = "flavour=html" if os.environ.get("BENCH_FLAVOUR") == "html" else ""
        status, out = call(app, "GET", json.loads(out)["stream_url"], {"HTTP_COOKIE": row["cookie"]}, query=query)
        assert status.startswith("200") and b"event: done" in out, (status, out[-300:])

    rows = json.loads(manifest.read_text())
    if len(rows) <= WARM + 1:
        raise SystemExit(f"need more than {WARM + 1} sessions")
    for row in rows[:WARM]:
        turn(row)
    queries: list[str] = []

    def count(execute, sql, params, many, context):  # every statement, whatever resets queries_log
        queries.append(sql)
        return execute(sql, params, many, context)

    turn(rows[WARM], count)  # the requests' statements (the turn's greenlet has its own connection)
    started = time.process_time()
    for row in rows[WARM + 1 :]:
        turn(row)
    measured = len(rows) - WARM - 1
    if anchor is not None:
        anchor.close()
    return {
        "turns": measured,
        "cpu_ms_per_turn": round(1000 * (time.process_time() - started) / measured, 2),
        "statements_per_turn": len(queries),  # through cursors: BEGIN and COMMIT not counted
    }


def _sqlite_anchor():
    """On SQLite, a connection held open for the whole run, as the worker holds one
    (config/gunicorn.conf.py, `post_worker_init`): else every connection's close is the last one,
    which checkpoints the WAL and deletes it, a cost no served turn pays."""
    import sqlite3

    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.sqlite3":
        return None
    anchor = sqlite3.connect(str(db["NAME"]), check_same_thread=False)
    anchor.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return anchor


def measuring(manifest: Path, tokens: int) -> list[str]:
    """The command of one in-process run: gevent patches the process first, as gunicorn's worker does."""
    entry = "from gevent import monkey; monkey.patch_all(); from bench.turncost import main; main()"
    return [sys.executable, "-c", entry, "--measure", str(manifest), "--tokens", str(tokens)]


def instructions(turns: int, tokens: int) -> dict:
    """Instructions per turn: valgrind runs of `turns` and `2 * turns` measured turns, differenced."""
    if not shutil.which("valgrind"):
        raise SystemExit("--callgrind needs valgrind (apt-get install valgrind)")
    totals = []
    for n in (turns, 2 * turns):
        manifest = prepare(tokens, WARM + 1 + n)
        out = RESULTS / f"turncost.callgrind.{n}"
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *measuring(manifest, tokens)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=3600,
        )
        found = re.search(r"Collected : (\d+)", run.stderr)
        if run.returncode or not found:
            raise SystemExit(f"valgrind run failed:\n{run.stderr[-2000:]}")
        totals.append(int(found.group(1)))
        out.unlink(missing_ok=True)
    return {"turns": turns, "instructions_per_turn": (totals[1] - totals[0]) // turns}


@contextlib.contextmanager
def _pg_database() -> Iterator[None]:
    """A PostgreSQL database of this run's own for what runs inside (`BENCH_PG_DB`), dropped after."""
    from bench.pg import pg_database

    with pg_database("turncost") as db:
        os.environ["BENCH_PG_DB"] = db
        try:
            yield
        finally:
            os.environ.pop("BENCH_PG_DB", None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=300, help="measured turns (callgrind: 30 and 60 by default)")
    ap.add_argument("--tokens", type=int, default=2, help="tokens per answer (default 2: the cost of a start)")
    ap.add_argument("--callgrind", action="store_true", help="count instructions with valgrind instead of CPU time")
    ap.add_argument(
        "--budgets",
        action="store_true",
        help="budget caps and rate limit on at their defaults (the bench turns them off)",
    )
    ap.add_argument("--html", action="store_true", help="read the browser's stream (`?flavour=html`) instead of JSON")
    ap.add_argument("--pg", action="store_true", help="on PostgreSQL (127.0.0.1:5432, a database of its own)")
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # one in-process run over a prepared manifest
    ap.add_argument("--prepare", type=int, metavar="ROUNDS", help=argparse.SUPPRESS)  # manifests for bench.run
    args = ap.parse_args()
    if args.budgets:
        os.environ["BENCH_BUDGETS"] = "1"
    if args.html:
        os.environ["BENCH_FLAVOUR"] = "html"
    if args.measure:
        print(json.dumps(measure(args.measure, args.tokens)))
    elif args.prepare:
        print(json.dumps(prepare_rounds(args.tokens, args.turns, args.prepare)))
    elif args.pg and not os.environ.get("BENCH_PG_DB"):
        with _pg_database():
            main()
    elif args.callgrind:
        turns = args.turns if args.turns != ap.get_default("turns") else 30
        print(json.dumps(instructions(turns, args.tokens)))
    else:
        manifest = prepare(args.tokens, WARM + 1 + args.turns)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            measuring(manifest, args.tokens),
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        print(out.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
