"""Streams that follow a turn on the other worker, through Redis, beside the same load followed in process.

    python -m bench.cross                     # N = 200,500,1000, 200 tokens at 50 ms
    python -m bench.cross --levels 100 --tokens 40

Two gunicorn servers ("workers" A and B, one gevent worker each, both pinned to SERVER_CPU with the
run's own `redis-server`) over one PostgreSQL database of the run's own, with
`AGENT_EVENTS_URL` pointing at that Redis. Two load clients (bench/client.py) on CLIENT_CPU share the
N turns: one posts to A, the other to B. In the `cross` mode each reads its streams from the *other*
server (every stream follows a turn running on the other worker, through Redis); in the `local`
mode from the server that runs the turn (in process). Reported per run: completed, errors, held
streams (peak at once), first-token p99 and added gap p99 (the larger of the two clients'),
server CPU per token (both workers) and redis-server's CPU per token. Prints one JSON line per
run and writes `bench/results/cross.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import RESULTS, server_env, write_script
from bench.pg import pg_database
from bench.streams import (
    CLIENT_CPU,
    PY,
    ROOT,
    SERVER_CPU,
    WARM,
    Server,
    cpu_seconds,
    free_port,
    migrate,
    run_quiet,
    setup_sessions,
    taskset,
)


def start_redis(port: int, log: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        taskset(SERVER_CPU)
        + ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=open(log, "ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    for _ in range(200):
        try:
            import socket

            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("redis-server did not start")


def client(port: int, follow: int, manifest: Path, skip: int, n: int, args, deadline: float) -> dict:
    cmd = taskset(CLIENT_CPU) + [
        PY,
        "-m",
        "bench.client",
        *("--port", str(port), "--manifest", str(manifest), "--skip", str(skip), "--n", str(n)),
        *("--tokens", str(args.tokens), "--delay-ms", str(args.delay_ms)),
        *("--ramp", str(args.ramp if n > WARM else 0), "--deadline", str(deadline)),
        *(("--follow-port", str(follow)) if follow else ()),
    ]
    out = run_quiet(cmd, {**os.environ, "PYTHONPATH": str(ROOT)}, timeout=deadline + 60)
    return json.loads(out.strip().splitlines()[-1])


def one_run(mode: str, n: int, env: dict, manifest: Path, first: int, args, redis_pid: int) -> dict:
    """N turns (rows first.. of the manifest, each a chat without history) after 2 x WARM unmeasured ones."""
    a = Server("django", env, RESULTS / f"server_cross_{mode}_{n}_a.log")
    b = Server("django", env, RESULTS / f"server_cross_{mode}_{n}_b.log")
    try:
        stream_s = args.tokens * args.delay_ms / 1000
        pairs = [(a.port, b.port if mode == "cross" else 0), (b.port, a.port if mode == "cross" else 0)]
        for i, (port, follow) in enumerate(pairs):  # warm-up: WARM turns through each server
            client(port, follow, manifest, first + i * WARM, WARM, args, deadline=stream_s * 3 + 10)
        time.sleep(0.5)
        cpu0 = cpu_seconds(a.pid) + cpu_seconds(b.pid)
        redis0 = cpu_seconds(redis_pid)
        half = n // 2
        deadline = args.ramp + stream_s * 4 + 20
        with ThreadPoolExecutor(2) as pool:
            runs = [
                pool.submit(client, port, follow, manifest, first + 2 * WARM + i * half, half, args, deadline)
                for i, (port, follow) in enumerate(pairs)
            ]
            halves = [r.result() for r in runs]
        cpu = cpu_seconds(a.pid) + cpu_seconds(b.pid) - cpu0
        redis_cpu = cpu_seconds(redis_pid) - redis0
    finally:
        a.stop()
        b.stop()
    tokens = max(1, sum(h["tokens"] for h in halves))
    worst = {k: max((h[k] or 0) for h in halves) for k in ("ttft_p99_ms", "gap_added_p99_ms", "gap_added_max_ms")}
    return {
        "mode": mode,
        "n": n,
        "completed": sum(h["completed"] for h in halves),
        "errors": sum(h["errors"] for h in halves),
        "error_kinds": [h["error_kinds"] for h in halves],
        "streams_peak": sum(h["streams_peak"] for h in halves),
        **worst,
        "tokens": tokens,
        "server_cpu_us_per_token": round(1e6 * cpu / tokens, 1),
        "redis_cpu_us_per_token": round(1e6 * redis_cpu / tokens, 1),
        "loadavg_1m_before": float(Path("/proc/loadavg").read_text().split()[0]),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default="200,500,1000")
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--delay-ms", type=int, default=50)
    ap.add_argument("--ramp", type=float, default=5.0)
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    RESULTS.mkdir(parents=True, exist_ok=True)
    script = write_script(args.tokens, args.delay_ms)
    redis_port = free_port()
    redis = start_redis(redis_port, RESULTS / "redis_cross.log")
    rows = []
    try:
        with pg_database("h3_bench_cross") as db:
            env = server_env(
                f"postgres://postgres@127.0.0.1:5432/{db}",
                script,
                AGENT_EVENTS_URL=f"redis://127.0.0.1:{redis_port}/0",
                DATABASE_POOL_MAX_SIZE="10",
            )
            migrate(env)
            manifest = setup_sessions(env, 2 * sum(2 * WARM + n for n in levels), "cross")
            first = 0
            for n in levels:
                for mode in ("local", "cross"):
                    row = one_run(mode, n, env, manifest, first, args, redis.pid)
                    first += 2 * WARM + n
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    finally:
        redis.terminate()
        redis.wait(timeout=10)
    (RESULTS / "cross.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
