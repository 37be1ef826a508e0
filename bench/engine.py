"""CPU per token of the engine's loop against a bare loop that yields the same bytes.

    python -m bench.engine [--rounds 7] [--turns 100] [--long 200]   # bench environment; one JSON object

The engine: the loop (`bench.project.engine_loop`) over a turn of the zero-delay fake, each event
through the API's SSE encoder. The bare loop: the same event list through the same encoder,
nothing else. Each is timed (`time.process_time()`) over turns of 1 token and of `--long` tokens;
the marginal token is the difference of the two per-turn costs divided by `long - 1`, so what a
turn costs once (its database work, the context, the budget) cancels out and what is left is the
per-token path. Each turn runs on a fresh chat (the fake replays call k of a chat). The collector
is tuned as in the worker (config/gunicorn.conf.py) with what setup loaded frozen.

The host's speed drifts within a run, so the figures are taken in rounds, each of every kind in
interleaved blocks; each figure is the median over the rounds, each ratio the median of the
rounds' ratios. `rounds` in the output lists every round, so several runs can be pooled.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time

import django

CHUNKS = 5  # blocks of each kind per round
GC_THRESHOLDS = (10_000, 20, 20)  # as the worker's (config/gunicorn.conf.py)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--turns", type=int, default=100, help="turns of each length per round (a multiple of 5)")
    ap.add_argument("--long", type=int, default=200, help="tokens of the long turn (the short one has 1)")
    args = ap.parse_args()
    django.setup()
    from django.contrib.auth import get_user_model

    from bench.common import script
    from bench.project import engine_loop, owner_scopes, sse_encoder, start_session, use_fake_script
    from blog.models import Blog, Consent, Seat

    run, encode = engine_loop(), sse_encoder()
    user, _ = get_user_model().objects.get_or_create(username="bench_engine")
    blog, _ = Blog.objects.get_or_create(slug="bench-engine", defaults={"title": "E", "owner": user})
    Seat.objects.get_or_create(user=user, blog=blog, defaults={"role": Seat.OWNER, "may_use_assistant": True})
    Consent.objects.get_or_create(user=user, blog=blog, client="", defaults={"scopes": owner_scopes()})
    files = {}
    for tokens in (1, args.long):
        fh = tempfile.NamedTemporaryFile("w", suffix=f"_{tokens}.json", delete=False)
        json.dump(script(tokens, 0), fh)
        fh.close()
        files[tokens] = fh.name

    def engine(tokens: int, turns: int) -> float:
        """CPU seconds per turn of the engine."""
        use_fake_script(files[tokens])
        sessions = [start_session(user, blog) for _ in range(turns + 1)]
        for i, (name, payload) in enumerate(run(sessions.pop())):  # warm
            encode(name, payload, i)
        cpu = 0.0
        for s in sessions:
            t0 = time.process_time()
            for i, (name, payload) in enumerate(run(s)):
                encode(name, payload, i)
            cpu += time.process_time() - t0
        return cpu / turns

    def bare(tokens: int, turns: int) -> float:
        """CPU seconds per turn of the bare loop."""
        events = script(tokens, 0)["calls"][0]

        def loop():
            n = 0
            for ev in events:
                if ev["kind"] == "text":
                    yield encode("token", {"text": ev["text"]}, n)
                    n += 1
            yield encode("done", {"message_id": 1, "stop_reason": "end_turn", "usage": events[-1]["usage"]}, n)

        for _ in loop():
            pass
        t0 = time.process_time()
        for _ in range(turns):
            for _ in loop():
                pass
        return (time.process_time() - t0) / turns

    gc.set_threshold(*GC_THRESHOLDS)
    gc.freeze()
    rounds = []
    try:
        for _ in range(args.rounds):
            cpu = dict.fromkeys(("bare_1", "engine_1", "bare_long", "engine_long"), 0.0)
            for _ in range(CHUNKS):  # short and long turns interleaved, so drift within a round cancels too
                cpu["bare_1"] += bare(1, 20 * args.turns // CHUNKS) / CHUNKS
                cpu["engine_1"] += engine(1, args.turns // CHUNKS) / CHUNKS
                cpu["bare_long"] += bare(args.long, 20 * args.turns // CHUNKS) / CHUNKS
                cpu["engine_long"] += engine(args.long, args.turns // CHUNKS) / CHUNKS
            rounds.append(figures(cpu, args.long))
    finally:
        for path in files.values():
            os.unlink(path)
    print(json.dumps(summary(rounds)))


def figures(r: dict, long: int) -> dict:
    """One round's figures in µs from its per-turn CPU seconds of 1-token and `long`-token turns."""
    bare_marginal = (r["bare_long"] - r["bare_1"]) / (long - 1)
    engine_marginal = (r["engine_long"] - r["engine_1"]) / (long - 1)
    return {
        "long_turn_tokens": long,
        "bare_us_per_token": 1e6 * r["bare_long"] / long,
        "bare_marginal_us": 1e6 * bare_marginal,
        "engine_us_per_token": 1e6 * r["engine_long"] / long,
        "engine_marginal_us": 1e6 * engine_marginal,
        "engine_turn_ms": 1e3 * r["engine_1"],
        "ratio_marginal": engine_marginal / bare_marginal if bare_marginal > 0 else None,
    }


def summary(rounds: list[dict]) -> dict:
    """Medians over `rounds` (each a `figures` dict), rounded; the rounds themselves too."""

    def median(key: str) -> float | None:
        values = [r[key] for r in rounds if r[key] is not None]
        return round(statistics.median(values), 3) if values else None

    ratios = [r["ratio_marginal"] for r in rounds if r["ratio_marginal"] is not None]
    return {
        "long_turn_tokens": rounds[0]["long_turn_tokens"],
        **{key: median(key) for key in rounds[0] if key != "long_turn_tokens"},
        "ratio_marginal_range": [round(min(ratios), 2), round(max(ratios), 2)] if ratios else None,
        "rounds": rounds,
    }


if __name__ == "__main__":
    main()
