"""Measure the baseline ("old") and this tree ("new") side by side in one run; write BENCHMARKS.md.

    make bench                          # = python -m bench.run: the full run (~10 min)
    python -m bench.run --quick         # small N, short streams (~2 min); writes bench/results/
    BENCH_BASELINE=<ref> make bench     # another baseline than bench/baseline.txt

The old tree is a git worktree of the baseline with this tree's bench code (bench/sides.py). Every
measurement runs on both sides in alternating order (old then new, then new then old, ...), so a
drift of the shared host's speed hits both alike; the bare gevent app (no project code) runs
beside them at every level. Prints one JSON line per measurement. Servers are pinned to core 0,
the load client to core 1 (`taskset`); everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

from bench.common import PG_BASE, RESULTS, ROOT, server_env, write_script
from bench.pg import max_connections, pg_database
from bench.sides import Tree, baseline_ref, order, trees
from bench.streams import (
    PY,
    SERVER_CPU,
    WARM,
    bare_manifest,
    migrate,
    one_run,
    run_quiet,
    setup_sessions,
    taskset,
)
from bench.turncost import measuring

SCENARIOS = ("streams", "pg", "turncost", "engine")  # the default; also: html, queries
SERVERS = ("product", "bare")  # the default; also: asgi (the ASGI alternative, on the old tree)
FULL = {"levels": "100,500,1000,1500", "tokens": 200, "ramp": 5.0, "turncost": (3, 200), "engine": (2, 4, 100, 2000)}
QUICK = {"levels": "20,60", "tokens": 40, "ramp": 0.5, "turncost": (2, 40), "engine": (1, 2, 30, 2000)}


def emit(line: dict, sink: list) -> None:
    sink.append(line)
    print(json.dumps(line), flush=True)


def attempt(sink: list, scenario: str, side: str, step) -> None:
    """Run one side's step; a failure (a tree whose code the step cannot drive) is recorded and the
    run goes on with the other measurements."""
    try:
        step()
    except (RuntimeError, OSError, ValueError, KeyError) as exc:
        emit({"scenario": scenario, "side": side, "failed": str(exc)[-1500:]}, sink)


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small N, short streams, fewer rounds: ~2 minutes")
    ap.add_argument("--baseline", help="the old tree's git ref (default: BENCH_BASELINE, else bench/baseline.txt)")
    ap.add_argument(
        "--levels", default="", help=f"comma-separated N (default {FULL['levels']}; quick {QUICK['levels']})"
    )
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="any of streams,pg,turncost,engine,html,queries")
    ap.add_argument("--servers", default=",".join(SERVERS), help="stream servers: product,bare,asgi")
    ap.add_argument("--pg-n", type=int, default=1000, help="N of the product's run on PostgreSQL")
    ap.add_argument("--tokens", type=int, help="tokens per stream (default 200; quick 40)")
    ap.add_argument("--delay-ms", type=int, default=50, help="pacing between tokens")
    ap.add_argument("--report-only", action="store_true", help="rewrite the report from the last saved results")
    ap.add_argument("--out", default="", help="the report (default BENCHMARKS.md; quick or a slice: bench/results/)")
    args = ap.parse_args()
    args.mode = QUICK if args.quick else FULL
    args.tokens = args.tokens or args.mode["tokens"]
    args.ramp = args.mode["ramp"]
    args.level_list = [int(x) for x in (args.levels or args.mode["levels"]).split(",")]
    args.wanted = set(args.scenarios.split(","))
    args.server_list = [s for s in ("product", "bare", "asgi") if s in args.servers.split(",")]
    return args


def main() -> None:
    args = parse()
    partial = args.levels or args.scenarios != ",".join(SCENARIOS) or args.servers != ",".join(SERVERS)
    tag = "quick" if args.quick else "partial" if partial else ""  # a slice never overwrites the full run
    saved = RESULTS / (f"results.{tag}.json" if tag else "results.json")
    out = Path(args.out) if args.out else (RESULTS / f"BENCHMARKS.{tag}.md" if tag else ROOT / "BENCHMARKS.md")
    RESULTS.mkdir(parents=True, exist_ok=True)
    from bench.report import write_report

    if args.report_only:
        meta, *lines = json.loads(saved.read_text())
    else:
        started = time.time()
        lines = measure(args)
        meta = {"started": started, "minutes": (time.time() - started) / 60, "quick": args.quick, "ramp": args.ramp}
        meta.update({"tokens": args.tokens, "delay_ms": args.delay_ms, "levels": args.level_list, "pg_n": args.pg_n})
        saved.write_text(json.dumps([meta, *lines], indent=1))
    write_report(out, lines, meta)
    print(f"wrote {out}", file=sys.stderr)


def measure(args: argparse.Namespace) -> list[dict]:
    """Every wanted measurement on both trees; the JSON lines."""
    lines: list[dict] = []
    ref = baseline_ref(args.baseline)
    with trees(ref) as sides:
        for t in sides:
            emit({"scenario": "tree", "side": t.side, "commit": t.commit, "subject": t.subject, "ref": ref}, lines)
        script = write_script(args.tokens, args.delay_ms)
        envs = {t.side: tree_env(t, f"sqlite:///{RESULTS / f'bench_{t.side}.sqlite3'}", script, args) for t in sides}
        for t in sides:
            # A fresh database per run: one left by a run against another baseline may carry
            # migrations this side's tree does not have (its schema would not be this tree's).
            for leftover in RESULTS.glob(f"bench_{t.side}.sqlite3*"):
                leftover.unlink()
            migrate(envs[t.side], t.path)
        speed_at_start, cpu_at_start = calibrate(envs["new"]), core_times()
        if "streams" in args.wanted:
            stream_levels(lines, args.level_list, args.server_list, sides, envs, args)
        if "html" in args.wanted:  # the product at the reference level, as the chat page reads it
            n = 1000 if 1000 in args.level_list else max(args.level_list)
            for t in order(0, sides):
                attempt(lines, "streams_html", t.side, lambda t=t: product_run(lines, "django_html", n, t, envs, args))
        if "pg" in args.wanted and not args.quick:
            for t in order(1, sides):
                attempt(lines, "streams_pg", t.side, lambda t=t: pg_run(lines, t, script, args))
        if "turncost" in args.wanted:
            for db in ("sqlite", "pg"):
                turncost(lines, db, sides, *args.mode["turncost"])
        if "engine" in args.wanted:
            engine(lines, sides, envs, *args.mode["engine"])
        if "queries" in args.wanted:
            for t in sides:
                attempt(lines, "queries", t.side, lambda t=t: queries(lines, t, envs))
        machine = {"reference_cpu_ms_start": speed_at_start, "reference_cpu_ms_end": calibrate(envs["new"])}
        emit({"scenario": "machine", **machine, "server_core_steal_pct": steal_pct(cpu_at_start, core_times())}, lines)
    return lines


def tree_env(tree: Tree, db_url: str, script: Path, args) -> dict:
    extra = {"BENCH_TOKENS": str(args.tokens), "BENCH_DELAY_MS": str(args.delay_ms)}
    return server_env(db_url, script, root=tree.path, **extra)


def stream_levels(lines: list, levels: list[int], servers: list[str], sides: tuple, envs: dict, args) -> None:
    """At each level: the product of each tree, the bare app (and the ASGI app), in alternating order."""
    old, new = sides
    for i, n in enumerate(levels):
        runs = []
        if "product" in servers:
            runs += [("old", old), ("new", new)]
        if "bare" in servers:
            runs.append(("bare", new))
        if "asgi" in servers:
            runs.append(("asgi", old))  # bench/asgi_views.py is built on the baseline engine's internals
        for server, tree in order(i, tuple(runs)):
            if server in ("old", "new"):
                attempt(lines, "streams", server, lambda t=tree, n=n: product_run(lines, "django", n, t, envs, args))
                continue
            attempt(lines, "streams", server, lambda s=server, t=tree, n=n: baseline_run(lines, s, n, t, envs, args))


def baseline_run(lines: list, server: str, n: int, tree: Tree, envs: dict, args) -> None:
    """The bare app (no project code) or the ASGI alternative, beside the products."""
    env = envs[tree.side]
    manifest = bare_manifest(n + WARM) if server == "bare" else setup_sessions(env, n + WARM, server, tree.path)
    r = one_run(server, n, env, manifest, args, tree.path, label=server)
    emit({"scenario": "streams", "server": server, "side": tree.side, "n": r.pop("n"), **r}, lines)


def product_run(lines: list, kind: str, n: int, tree: Tree, envs: dict, args) -> None:
    env = envs[tree.side]
    manifest = setup_sessions(env, n + WARM, f"{kind}_{tree.side}", tree.path)
    r = one_run(kind, n, env, manifest, args, tree.path, label=f"{kind}_{tree.side}")
    scenario = {"django": "streams", "django_html": "streams_html"}[kind]
    emit({"scenario": scenario, "server": tree.side, "side": tree.side, "n": r.pop("n"), **r}, lines)


def pg_run(lines: list, tree: Tree, script: Path, args) -> None:
    with pg_database(f"bench_{tree.side}") as db:
        env = tree_env(tree, f"{PG_BASE}/{db}", script, args)
        migrate(env, tree.path)
        manifest = setup_sessions(env, args.pg_n + WARM, f"pg_{tree.side}", tree.path)
        r = one_run("django_pg", args.pg_n, env, manifest, args, tree.path, pg_db=db, label=f"pg_{tree.side}")
    r["pg_max_connections"] = max_connections()
    emit({"scenario": "streams_pg", "server": tree.side, "side": tree.side, "n": r.pop("n"), **r}, lines)


def turncost(lines: list, db: str, sides: tuple, rounds: int, turns: int, tokens: int = 2) -> None:
    """`bench.turncost` on each tree in `rounds` alternating runs of `turns` turns; per side the median."""
    with contextlib.ExitStack() as stack:
        envs, manifests, runs = {}, {}, {t.side: [] for t in sides}
        for t in sides:
            env = {**os.environ, "PYTHONPATH": str(t.path)}
            if db == "pg":
                env["BENCH_PG_DB"] = stack.enter_context(pg_database(f"turncost_{t.side}"))
            cmd = [PY, "-m", "bench.turncost", "--prepare", str(rounds), "--turns", str(turns), "--tokens", str(tokens)]
            try:
                manifests[t.side] = json.loads(run_quiet(cmd, env, 900, t.path).splitlines()[-1])
                envs[t.side] = env
            except RuntimeError as exc:
                emit({"scenario": f"turncost_{db}", "side": t.side, "failed": str(exc)[-1500:]}, lines)
        for r in range(rounds):
            for t in order(r, sides):
                if t.side not in envs:
                    continue
                cmd = taskset(SERVER_CPU) + measuring(Path(manifests[t.side][r]), tokens)
                try:
                    runs[t.side].append(json.loads(run_quiet(cmd, envs[t.side], 900, t.path).splitlines()[-1]))
                except RuntimeError as exc:
                    emit({"scenario": f"turncost_{db}", "side": t.side, "failed": str(exc)[-1500:]}, lines)
                    envs.pop(t.side)
    for t in sides:
        if runs[t.side] and t.side in envs:
            ms = [x["cpu_ms_per_turn"] for x in runs[t.side]]
            emit(
                {
                    "scenario": f"turncost_{db}",
                    "side": t.side,
                    "cpu_ms_per_turn": round(statistics.median(ms), 2),
                    "rounds_ms": ms,
                    "turns_per_round": turns,
                    "statements_per_turn": runs[t.side][-1]["statements_per_turn"],
                },
                lines,
            )


def engine(lines: list, sides: tuple, envs: dict, runs: int, rounds: int, turns: int, long: int) -> None:
    """`bench.engine` on each tree, `runs` processes each in alternating order; the rounds pooled."""
    from bench.engine import summary

    pooled: dict[str, list] = {t.side: [] for t in sides}
    failed: dict[str, str] = {}
    for i in range(2 * runs):
        t = order(i // 2, sides)[i % 2]  # old new new old ...
        if t.side in failed:
            continue
        cmd = taskset(SERVER_CPU) + [PY, "-m", "bench.engine", "--rounds", str(rounds), "--turns", str(turns)]
        cmd += ["--long", str(long)]
        try:
            pooled[t.side] += json.loads(run_quiet(cmd, envs[t.side], 900, t.path).splitlines()[-1])["rounds"]
        except RuntimeError as exc:
            failed[t.side] = str(exc)[-1500:]
    for t in sides:
        if t.side in failed:
            emit({"scenario": "engine", "side": t.side, "failed": failed[t.side]}, lines)
        else:
            emit({"scenario": "engine", "side": t.side, **summary(pooled[t.side])}, lines)


def queries(lines: list, tree: Tree, envs: dict) -> None:
    env = {k: v for k, v in envs[tree.side].items() if not k.startswith(("AGENT_BUDGET_", "AGENT_MESSAGES_"))}
    out = run_quiet([PY, "-m", "bench.queries"], env, 300, tree.path)
    emit({"scenario": "queries", "side": tree.side, **json.loads(out.splitlines()[-1])}, lines)


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


if __name__ == "__main__":
    main()
