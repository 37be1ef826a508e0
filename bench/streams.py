"""One load run against one server: start it pinned to its core, warm it, run the client, read its CPU.

Servers: the product (`django`: gunicorn with the tree's own `config/gunicorn.conf.py`), the bare
gevent app (`bare`: no Django, no database) and the ASGI alternative (`asgi`: uvicorn). Each runs
with the tree it measures as its working directory and PYTHONPATH; it listens on 127.0.0.1 only,
runs under a deadline and is stopped by its PID.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.common import RESULTS, ROOT

PY = sys.executable
SERVER_CPU, CLIENT_CPU = "0", "1"
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


def run_quiet(cmd: list[str], env: dict, timeout: float, cwd: Path = ROOT) -> str:
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}")
    return p.stdout


def migrate(env: dict, cwd: Path = ROOT) -> None:
    """The tree at `cwd` made ready to serve as a deploy would: its static files collected (with DEBUG
    off, `check` and `migrate` refuse without them), then its migrations."""
    run_quiet([PY, "manage.py", "collectstatic", "--noinput"], env, timeout=300, cwd=cwd)
    run_quiet([PY, "manage.py", "migrate", "--noinput"], env, timeout=300, cwd=cwd)


def setup_sessions(env: dict, count: int, name: str, cwd: Path = ROOT) -> Path:
    """`count` signed-in users with a fresh chat each, made by the tree at `cwd`; their manifest."""
    out = RESULTS / f"manifest_{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    run_quiet([PY, "-m", "bench.setup_db", "--sessions", str(count), "--out", str(out)], env, timeout=600, cwd=cwd)
    return out


def bare_manifest(count: int) -> Path:
    out = RESULTS / "manifest_bare.json"
    rows = [
        {"session": f"00000000-0000-4000-8000-{i:012d}", "csrf": "x" * 32, "cookie": "sessionid=none"}
        for i in range(count)
    ]
    out.write_text(json.dumps(rows))
    return out


class Server:
    """One server process pinned to SERVER_CPU, run from the tree at `cwd`; `pid` is the process that
    does the work."""

    def __init__(self, kind: str, env: dict, log: Path, cwd: Path = ROOT) -> None:
        self.kind, self.port = kind, free_port()
        env = {**env, "BIND": f"127.0.0.1:{self.port}"}
        gunicorn = [str(Path(PY).parent / "gunicorn"), "-c", "config/gunicorn.conf.py", "--backlog", "4096"]
        uvicorn = [str(Path(PY).parent / "uvicorn"), "bench.asgi:application", "--host", "127.0.0.1"]
        cmd = {
            "django": gunicorn + ["config.wsgi"],
            "django_anchor": [
                c if c != "config/gunicorn.conf.py" else "bench/gunicorn_anchor.conf.py" for c in gunicorn
            ]
            + ["config.wsgi"],
            "bare": gunicorn + ["bench.bare_app:application"],
            "asgi": uvicorn
            + ["--port", str(self.port), "--log-level", "warning", "--no-access-log", "--backlog", "4096"],
        }[kind]
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(
            taskset(SERVER_CPU) + cmd,
            env=env,
            cwd=cwd,
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
    """The load client (bench/client.py) on CLIENT_CPU over rows skip..skip+n of `manifest`."""
    cmd = taskset(CLIENT_CPU) + [
        PY,
        "-m",
        "bench.client",
        *("--port", str(port), "--manifest", str(manifest), "--skip", str(skip), "--n", str(n)),
        *("--tokens", str(args.tokens), "--delay-ms", str(args.delay_ms)),
        *("--ramp", str(args.ramp if n > WARM else 0), "--deadline", str(deadline)),
        *("--query", "?flavour=html" if kind == "django_html" else ""),
    ]
    out = run_quiet(cmd, {**os.environ, "PYTHONPATH": str(ROOT)}, timeout=deadline + 60)
    return json.loads(out.strip().splitlines()[-1])


def one_run(
    kind: str, n: int, env: dict, manifest: Path, args, cwd: Path = ROOT, pg_db: str | None = None, label: str = ""
) -> dict:
    """N turns against a fresh server of `kind` from the tree at `cwd`, after WARM unmeasured ones."""
    log = RESULTS / f"server_{label or kind}.log"
    server = Server("django" if kind in PRODUCT_KINDS else kind, env, log, cwd)
    try:
        stream_s = args.tokens * args.delay_ms / 1000
        client(kind, server.port, manifest, 0, min(WARM, n), args, deadline=stream_s * 3 + 10)  # warm-up
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
            "server_cpu_s": round(cpu, 2),
            "server_cpu_us_per_token": round(1e6 * cpu / tokens, 1),
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
    return result


def held_at(r: dict) -> int:
    """The streams one run held: its peak at once, if every turn completed without error and the p99
    added gap was within the target; else 0."""
    ok = r["errors"] == 0 and r["completed"] == r["n"] and (r["gap_added_p99_ms"] or 0) <= GAP_TARGET_MS
    return r.get("streams_peak", r["n"]) if ok else 0


def held(rows: list[dict], server: str) -> int:
    """The largest N this server held: every turn completed, all N streaming at one instant (a server
    that queues starts until earlier streams end does not hold N concurrent turns), p99 added gap
    within the target."""
    return max((r["n"] for r in rows if r["server"] == server and held_at(r) >= r["n"]), default=0)
