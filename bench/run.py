"""Run the benchmarks side by side and write BENCHMARKS.md (issue #6).

    python -m bench.run            # full: N = 100, 500, 1000, 1500, 2000 + PostgreSQL 1,000 (~10 min)
    python -m bench.run --quick    # N = 20, 40-token streams, no PostgreSQL (< 2 min); writes bench/results/

Prints one JSON line per scenario run. Servers are pinned to core 0, the load client to core 1
(`taskset`); everything listens on 127.0.0.1 only; every server, client and helper runs under a
deadline and is stopped by its PID.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from bench.common import PG_BASE, RESULTS, ROOT, server_env, write_script

PY = sys.executable
SERVER_CPU, CLIENT_CPU = "0", "1"
SCENARIOS = ("django", "bare", "asgi")
LABELS = {
    "django": "product: gunicorn gevent, Django sync view (1 worker)",
    "bare": "bare gevent WSGI app (no Django, no DB)",
    "asgi": "Django async view, uvicorn (ASGI)",
    "django_pg": "product on PostgreSQL",
    "django_html": "product, the browser's stream (?flavour=html)",
}
PRODUCT_KINDS = ("django", "django_pg", "django_html")
GAP_TARGET_MS = 50.0
WARM = 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def taskset(cpu: str) -> list[str]:
    return ["taskset", "-c", cpu] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 else []


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def run_quiet(cmd: list[str], env: dict, timeout: float) -> str:
    p = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
    return p.stdout


class Server:
    """One server process pinned to SERVER_CPU; `pid` is the process that does the work."""

    def __init__(self, kind: str, env: dict, log: Path) -> None:
        self.kind, self.port = kind, free_port()
        env = {**env, "BIND": f"127.0.0.1:{self.port}"}
        gunicorn = [str(Path(PY).parent / "gunicorn"), "-c", "config/gunicorn.conf.py", "--backlog", "4096"]
        cmd = {
            "django": gunicorn + ["config.wsgi"],
            "django_anchor": [
                c if c != "config/gunicorn.conf.py" else "bench/gunicorn_anchor.conf.py" for c in gunicorn
            ]
            + ["config.wsgi"],
            "bare": gunicorn + ["bench.bare_app:application"],
            "asgi": [
                str(Path(PY).parent / "uvicorn"),
                "bench.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
                "--no-access-log",
                "--backlog",
                "4096",
            ],
        }[kind]
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(
            taskset(SERVER_CPU) + cmd,
            env=env,
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.pid = self._wait_ready()

    def _wait_ready(self, timeout: float = 60) -> int:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} server exited ({self.proc.returncode}); see {self.log.name}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            except OSError:
                time.sleep(0.2)
                continue
            if self.kind == "asgi":
                return self.proc.pid
            kids = children(self.proc.pid)
            if kids:
                return kids[0]
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.kind} server did not start in {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=25)
            except subprocess.TimeoutExpired:
                for pid in [*children(self.proc.pid), self.proc.pid]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                self.proc.wait(timeout=10)
        self.log.close()


class Sampler(threading.Thread):
    """Peak RSS of the worker and (optionally) peak PostgreSQL connections to the bench database."""

    def __init__(self, pid: int, pg_db: str | None = None) -> None:
        super().__init__(daemon=True)
        self.pid, self.pg_db = pid, pg_db
        self.peak_rss = rss_kb(pid)
        self.peak_pg = 0
        self.halt = threading.Event()

    def run(self) -> None:
        conn = None
        if self.pg_db:
            import psycopg

            conn = psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True)
        while not self.halt.wait(0.05):
            try:
                self.peak_rss = max(self.peak_rss, rss_kb(self.pid))
            except OSError:
                pass
            if conn is not None:
                n = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                    (self.pg_db,),
                ).fetchone()[0]
                self.peak_pg = max(self.peak_pg, n)
        if conn is not None:
            conn.close()


def client(kind: str, port: int, manifest: Path, skip: int, n: int, args, deadline: float) -> dict:
    cmd = taskset(CLIENT_CPU) + [
        PY,
        "-m",
        "bench.client",
        "--port",
        str(port),
        "--manifest",
        str(manifest),
        "--skip",
        str(skip),
        "--n",
        str(n),
        "--tokens",
        str(args.tokens),
        "--delay-ms",
        str(args.delay_ms),
        "--ramp",
        str(args.ramp if n > WARM else 0),
        "--deadline",
        str(deadline),
        "--query",
        "?flavour=html" if kind == "django_html" or args.flavour == "html" and kind in PRODUCT_KINDS else "",
    ]
    out = run_quiet(cmd, {**os.environ, "PYTHONPATH": str(ROOT)}, timeout=deadline + 60)
    return json.loads(out.strip().splitlines()[-1])


def one_run(kind: str, n: int, env: dict, manifest: Path, args, pg_db: str | None = None) -> dict:
    server = Server("django" if kind in PRODUCT_KINDS else kind, env, RESULTS / f"server_{kind}.log")
    try:
        stream_s = args.tokens * args.delay_ms / 1000
        client(kind, server.port, manifest, 0, min(WARM, n), args, deadline=stream_s * 3 + 10)  # warm-up, not measured
        time.sleep(0.5)
        base_rss, cpu0 = rss_kb(server.pid), cpu_seconds(server.pid)
        load = float(Path("/proc/loadavg").read_text().split()[0])
        sampler = Sampler(server.pid, pg_db)
        sampler.start()
        result = client(kind, server.port, manifest, WARM, n, args, deadline=args.ramp + stream_s * 4 + 20)
        cpu = cpu_seconds(server.pid) - cpu0
        sampler.halt.set()
        sampler.join(timeout=5)
    finally:
        server.stop()
    tokens = max(1, result["tokens"])
    result.update(
        {
            "scenario": kind,
            "server_cpu_s": round(cpu, 2),
            "server_cpu_s_per_1k_tokens": round(1000 * cpu / tokens, 3),
            "server_cpu_pct": round(100 * cpu / max(result["wall_s"], 1e-9), 1),
            "rss_base_mb": round(base_rss / 1024, 1),
            "rss_peak_mb": round(sampler.peak_rss / 1024, 1),
            "rss_kb_per_stream": round((sampler.peak_rss - base_rss) / n, 1),
            "loadavg_1m_before": load,  # other work on this shared 2-core machine
        }
    )
    if pg_db:
        result["pg_peak_connections"] = sampler.peak_pg
    return {"scenario": result.pop("scenario"), "n": result.pop("n"), **result}


def setup_sessions(env: dict, count: int, name: str) -> Path:
    out = RESULTS / f"manifest_{name}.json"
    run_quiet([PY, "-m", "bench.setup_db", "--sessions", str(count), "--out", str(out)], env, timeout=600)
    return out


def bare_manifest(count: int) -> Path:
    out = RESULTS / "manifest_bare.json"
    out.write_text(
        json.dumps(
            [
                {"session": f"00000000-0000-4000-8000-{i:012d}", "csrf": "x" * 32, "cookie": "sessionid=none"}
                for i in range(count)
            ]
        )
    )
    return out


def migrate(env: dict) -> None:
    run_quiet([PY, "manage.py", "migrate", "--noinput"], env, timeout=300)


def emit(line: dict, sink: list) -> None:
    sink.append(line)
    print(json.dumps(line), flush=True)


def held_at(r: dict) -> int:
    """The streams one run held: its peak at once, if every turn completed without error and the p99
    added gap was within the target; else 0."""
    ok = r["errors"] == 0 and r["completed"] == r["n"] and (r["gap_added_p99_ms"] or 0) <= GAP_TARGET_MS
    return r.get("streams_peak", r["n"]) if ok else 0


def held(rows: list[dict], kind: str) -> int:
    """The largest N this server held: every turn completed, all N streaming at one instant (a server
    that queues starts until earlier streams end does not hold N concurrent turns), p99 added gap
    within the target."""
    return max((r["n"] for r in rows if r["scenario"] == kind and held_at(r) >= r["n"]), default=0)


DEFAULT_SCENARIOS = "streams,html,pg,queries,engine"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small N and short streams, no PostgreSQL: < 2 minutes")
    ap.add_argument("--levels", default="", help="comma-separated N (default 100,500,1000,1500,2000; quick: 20)")
    ap.add_argument("--scenarios", default=DEFAULT_SCENARIOS, help="any of streams,html,pg,queries,engine")
    ap.add_argument("--only", default=",".join(SCENARIOS), help="stream servers to run: django,bare,asgi")
    ap.add_argument("--pg-n", type=int, default=1000)
    ap.add_argument("--tokens", dest="tokens_arg", type=int, help="tokens per stream (default 200; quick: 40)")
    ap.add_argument("--delay-ms", dest="delay_arg", type=int, help="pacing between tokens (default 50)")
    ap.add_argument(
        "--flavour",
        default="json",
        choices=("json", "html"),
        help="the product's stream: the API's JSON or the browser's HTML",
    )
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from the last saved results")
    ap.add_argument(
        "--out", default="", help="the report (default BENCHMARKS.md; quick: bench/results/BENCHMARKS.quick.md)"
    )
    args = ap.parse_args()
    if args.quick:
        args.tokens, args.delay_ms, args.ramp = 40, 50, 0.5
        levels = [int(x) for x in (args.levels or "20").split(",")]
        wanted = set(args.scenarios.split(",")) - {"pg"}
        out = Path(args.out or RESULTS / "BENCHMARKS.quick.md")
    else:
        args.tokens, args.delay_ms, args.ramp = 200, 50, 5.0
        levels = [int(x) for x in (args.levels or "100,500,1000,1500,2000").split(",")]
        wanted = set(args.scenarios.split(","))
        out = Path(args.out or ROOT / "BENCHMARKS.md")
    args.tokens, args.delay_ms = args.tokens_arg or args.tokens, args.delay_arg or args.delay_ms
    only = [s for s in SCENARIOS if s in args.only.split(",")]
    RESULTS.mkdir(parents=True, exist_ok=True)
    partial = (
        args.levels
        or args.scenarios != DEFAULT_SCENARIOS
        or args.only != ",".join(SCENARIOS)
        or args.tokens_arg
        or args.delay_arg
        or args.flavour != "json"
    ) and not args.report_only
    # A slice never overwrites the full run's results (the report is rebuilt from those).
    saved = RESULTS / ("results.quick.json" if args.quick else "results.partial.json" if partial else "results.json")
    if partial and not args.out and not args.quick:
        out = RESULTS / "BENCHMARKS.partial.md"  # nor the report built from them
    if args.report_only:
        from bench.report import write_report

        lines = json.loads(saved.read_text())
        meta = lines.pop(0) if "started" in lines[0] else {"started": saved.stat().st_mtime - 720}
        levels = sorted({r["n"] for r in lines if r["scenario"] in SCENARIOS}) or levels
        args.ramp = meta.get("ramp", args.ramp)
        write_report(out, lines, lines[-1], args, levels, meta["started"], meta.get("minutes"))
        print(f"wrote {out}", file=sys.stderr)
        return
    started = time.time()
    db_file = RESULTS / "bench.sqlite3"
    for f in RESULTS.glob("bench.sqlite3*"):
        f.unlink()
    script = write_script(args.tokens, args.delay_ms)
    env = server_env(f"sqlite:///{db_file}", script, BENCH_TOKENS=str(args.tokens), BENCH_DELAY_MS=str(args.delay_ms))
    migrate(env)
    lines: list[dict] = []
    speed_at_start, cpu_at_start = calibrate(env), core_times()

    if "streams" in wanted:
        for n in levels:
            for kind in only:
                if kind == "bare":
                    manifest = bare_manifest(n + WARM)
                else:
                    manifest = setup_sessions(env, n + WARM, kind)
                emit(one_run(kind, n, env, manifest, args), lines)

    if "html" in wanted:  # the product at the reference level, as the chat page reads it
        n = 1000 if 1000 in levels else max(levels)
        emit(one_run("django_html", n, env, setup_sessions(env, n + WARM, "html"), args), lines)

    if "pg" in wanted:
        emit(pg_run(args, script), lines)

    if "queries" in wanted:
        qenv = {k: v for k, v in env.items() if not k.startswith(("AGENT_BUDGET_", "AGENT_MESSAGES_"))}
        emit(
            {"scenario": "queries", **json.loads(run_quiet([PY, "-m", "bench.queries"], qenv, 300).splitlines()[-1])},
            lines,
        )
    if "engine" in wanted:
        emit(
            {
                "scenario": "engine",
                **json.loads(run_quiet(taskset(SERVER_CPU) + [PY, "-m", "bench.engine"], env, 600).splitlines()[-1]),
            },
            lines,
        )

    emit(
        {
            "scenario": "machine",
            "reference_cpu_ms_start": speed_at_start,
            "reference_cpu_ms_end": calibrate(env),
            "server_core_steal_pct": steal_pct(cpu_at_start, core_times()),
        },
        lines,
    )
    summary = summarize(lines, levels)
    emit({"scenario": "summary", **summary}, lines)
    minutes = (time.time() - started) / 60
    saved.write_text(json.dumps([{"started": started, "minutes": minutes, "ramp": args.ramp}, *lines], indent=1))
    from bench.report import write_report

    write_report(out, lines, summary, args, levels, started, minutes)
    print(f"wrote {out}", file=sys.stderr)


def calibrate(env: dict) -> float:
    """The host's speed now, on the server's core (bench/calibrate.py)."""
    out = run_quiet(taskset(SERVER_CPU) + [PY, "-m", "bench.calibrate"], env, 120)
    return json.loads(out.splitlines()[-1])["reference_cpu_ms"]


def core_times(core: str = SERVER_CPU) -> list[int]:
    """The server core's jiffies by kind from /proc/stat (user, nice, system, idle, iowait, irq, softirq, steal)."""
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith(f"cpu{core} "):
                return [int(x) for x in line.split()[1:9]]
    except OSError:
        pass
    return []


def steal_pct(before: list[int], after: list[int]) -> float | None:
    """Of the server core's time over the run, the share the hypervisor gave to other guests."""
    if len(before) < 8 or len(after) < 8:
        return None
    spent = [b - a for a, b in zip(before, after, strict=True)]
    return round(100 * spent[7] / sum(spent), 1) if sum(spent) else None


@contextlib.contextmanager
def pg_database(prefix: str) -> Iterator[str]:
    """A PostgreSQL database of this run's own (its name), dropped after."""
    db = f"{prefix}_{os.getpid()}"
    psql = ["psql", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-qc"]
    run_quiet(psql + [f'CREATE DATABASE "{db}"'], os.environ.copy(), 60)
    try:
        yield db
    finally:
        run_quiet(psql + [f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)'], os.environ.copy(), 60)


def pg_run(args, script: Path) -> dict:
    with pg_database("bench") as db:
        env = server_env(f"{PG_BASE}/{db}", script, BENCH_TOKENS=str(args.tokens), BENCH_DELAY_MS=str(args.delay_ms))
        migrate(env)
        manifest = setup_sessions(env, args.pg_n + WARM, "pg")
        result = one_run("django_pg", args.pg_n, env, manifest, args, pg_db=db)
        result["pg_max_connections"] = int(
            run_quiet(
                ["psql", "-h", "127.0.0.1", "-U", "postgres", "-Atc", "SHOW max_connections"], os.environ.copy(), 30
            ).strip()
        )
        return result


def summarize(lines: list[dict], levels: list[int]) -> dict:
    streams = [r for r in lines if r["scenario"] in SCENARIOS]
    s: dict = {"held": {k: held(streams, k) for k in SCENARIOS}}
    ref = 1000 if 1000 in levels else max(levels)
    s["ref_n"] = ref
    # CPU and memory ratios only mean something where every server finished every turn.
    clean = [n for n in levels if all(r["errors"] == 0 for r in streams if r["n"] == n)]
    cpu_n = max(clean, default=min(levels))
    s["cpu_ref_n"] = cpu_n
    for label, n in (("at", ref), ("cpu_at", cpu_n)):
        at = {r["scenario"]: r for r in streams if r["n"] == n}
        if "django" not in at:
            continue
        d = at["django"]
        s[f"{label}_{n}_gap_p99_ms_django"] = d["gap_added_p99_ms"]
        for other in ("bare", "asgi"):
            if other in at:
                o = at[other]
                s[f"{label}_{n}_cpu_per_token_vs_{other}"] = _ratio(
                    d["server_cpu_s_per_1k_tokens"], o["server_cpu_s_per_1k_tokens"]
                )
                s[f"{label}_{n}_rss_per_stream_vs_{other}"] = _ratio(d["rss_kb_per_stream"], o["rss_kb_per_stream"])
                s[f"{label}_{n}_gap_p99_ms_{other}"] = o["gap_added_p99_ms"]
    # The targets' reading: at N = ref, the streams each server held at once within the gap target.
    at_ref = {r["scenario"]: held_at(r) for r in streams if r["n"] == ref}
    s["held_at_ref"] = at_ref
    if "django" in at_ref:
        s["held_at_ref_vs_bare"] = _ratio(at_ref["django"], at_ref.get("bare"))
        s["held_at_ref_vs_asgi"] = _ratio(at_ref["django"], at_ref.get("asgi"))
    # Capacity (not a target): the largest level each server held.
    h = s["held"]
    s["held_vs_bare"] = _ratio(h["django"], h["bare"])
    s["held_vs_asgi"] = _ratio(h["django"], h["asgi"]) if h["asgi"] else None
    return s


def _ratio(a, b):
    return round(a / b, 2) if a is not None and b else None


if __name__ == "__main__":
    main()
