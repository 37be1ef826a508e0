"""Profile the product's worker under load: py-spy (sampling, non-blocking) while the client runs.

    python -m bench.profile --n 500 [--kind django] [--seconds 12]

Writes bench/results/profile_<kind>_<n>.txt (collapsed stacks) and prints the top functions by
self time and by inclusive time (product frames only in the second list).
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench import streams as R
from bench.common import RESULTS, server_env, write_script


def summarize(path: Path, top: int = 25) -> dict:
    self_t: collections.Counter = collections.Counter()
    incl: collections.Counter = collections.Counter()
    total = 0
    for line in path.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        n = int(n)
        total += n
        frames = stack.split(";")
        self_t[frames[-1]] += n
        for f in set(frames):
            incl[f] += n
    return {
        "samples": total,
        "self": [(f, round(100 * c / total, 1)) for f, c in self_t.most_common(top)],
        "inclusive_project": [
            (f, round(100 * c / total, 1))
            for f, c in incl.most_common(400)
            if "(agent/" in f or "(blog/" in f or "(config/" in f
        ][:top],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--kind", default="django")
    ap.add_argument("--seconds", type=float, default=12)
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--delay-ms", type=int, default=50)
    ap.add_argument("--ramp", type=float, default=2.0)
    ap.add_argument("--rate", type=int, default=200)
    ap.add_argument("--flavour", default="json", choices=("json", "html"), help="the product's stream flavour")
    ap.add_argument("--idle", action="store_true", help="also sample while blocked (shows time lost in blocking calls)")
    args = ap.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    db_file = RESULTS / "profile.sqlite3"
    for f in RESULTS.glob("profile.sqlite3*"):
        f.unlink()
    script = write_script(args.tokens, args.delay_ms)
    env = server_env(f"sqlite:///{db_file}", script)
    R.migrate(env)
    manifest = R.setup_sessions(env, args.n + R.WARM, "profile")
    server = R.Server(args.kind, env, RESULTS / "server_profile.log")
    kind = "django_html" if args.flavour == "html" else args.kind  # the client reads the browser's stream
    out = RESULTS / f"profile_{args.kind}_{args.n}.txt"
    try:
        R.client(kind, server.port, manifest, 0, R.WARM, args, deadline=args.tokens * args.delay_ms / 1000 * 3 + 10)
        spy = subprocess.Popen(
            R.taskset(R.CLIENT_CPU)
            + [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "-p",
                str(server.pid),
                "--nonblocking",
                "-r",
                str(args.rate),
                "-d",
                str(int(args.seconds)),
                "-f",
                "raw",
                "-o",
                str(out),
            ]
            + (["--idle"] if args.idle else []),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(1)
        result = {}
        t = threading.Thread(
            target=lambda: result.update(
                R.client(kind, server.port, manifest, R.WARM, args.n, args, deadline=args.ramp + 60)
            )
        )
        t.start()
        spy.wait(timeout=args.seconds + 30)
        t.join(timeout=120)
        print(json.dumps(result))
    finally:
        server.stop()
    s = summarize(out)
    print(f"samples: {s['samples']}")
    print("self %:")
    for f, p in s["self"]:
        print(f"  {p:5.1f}  {f}")
    print("inclusive % (project frames):")
    for f, p in s["inclusive_project"]:
        print(f"  {p:5.1f}  {f}")


if __name__ == "__main__":
    main()
