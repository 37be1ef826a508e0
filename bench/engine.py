"""Scenario 5: CPU per token of the engine (run_agent + agent.sse.encode_json) with a zero-delay fake,
against a bare loop that yields the same bytes (the same event list through encode_json, nothing else).

`python -m bench.engine` (bench environment) prints one JSON object. CPU is `time.process_time()`.
Each turn runs on a fresh session (the fake replays call k of a session). Also measured: the
product's own turn path (`turns.drive`: hub publish + stop check) and the marginal cost per token
(2,000-token turns minus 200-token turns), which removes the per-turn database work.

The host's speed drifts within a run (the bare loop alone has measured 2.1-3.9 µs a token minutes
apart), so the measurements are taken in `ROUNDS` rounds, each of every kind back to back; each
figure is the median over the rounds, and each ratio the median of the rounds' own ratios.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time

import django

ROUNDS = 7


def main() -> None:
    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from agent import sse, turns
    from agent.backends import reset_backends
    from agent.loop import run_agent
    from bench.common import script
    from blog.access import ROLE_SCOPES
    from blog.chat import start_session
    from blog.models import Blog, Consent, Seat

    User = get_user_model()
    user, _ = User.objects.get_or_create(username="bench_engine")
    blog, _ = Blog.objects.get_or_create(slug="bench-engine", defaults={"title": "E", "owner": user})
    Seat.objects.get_or_create(user=user, blog=blog, defaults={"role": Seat.OWNER, "may_use_assistant": True})
    Consent.objects.get_or_create(user=user, blog=blog, client="", defaults={"scopes": sorted(ROLE_SCOPES[Seat.OWNER])})
    tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)

    def use(tokens: int) -> list[dict]:
        s = script(tokens, 0)
        with open(tmp.name, "w") as fh:
            json.dump(s, fh)
        settings.AGENT_BACKEND, settings.AGENT_FAKE_SCRIPT = "fake", tmp.name
        reset_backends()
        return s["calls"][0]

    def engine(tokens: int, turns_n: int) -> float:
        use(tokens)
        sessions = [start_session(user, blog) for _ in range(turns_n + 1)]
        _run_engine(sessions.pop(), run_agent, sse)  # warm
        cpu = 0.0
        for s in sessions:
            t0 = time.process_time()
            _run_engine(s, run_agent, sse)
            cpu += time.process_time() - t0
        return cpu / (turns_n * tokens)

    def product(tokens: int, turns_n: int) -> float:
        use(tokens)
        sessions = [start_session(user, blog) for _ in range(turns_n + 1)]
        cpu = 0.0
        for i, s in enumerate(sessions):
            turn, _ = turns.begin(s, "Go.")
            t0 = time.process_time()
            for j, (name, payload) in enumerate(turns.drive(turn)):  # as turns.start runs it
                sse.encode_json(name, payload, j)
            if i:
                cpu += time.process_time() - t0
        return cpu / (turns_n * tokens)

    def bare(tokens: int, reps: int) -> float:
        events = use(tokens)

        def loop():
            n = 0
            for ev in events:
                if ev["kind"] == "text":
                    yield sse.encode_json("token", {"text": ev["text"]}, n)
                    n += 1
            yield sse.encode_json("done", {"message_id": 1, "stop_reason": "end_turn", "usage": events[-1]["usage"]}, n)

        for _ in loop():
            pass
        t0 = time.process_time()
        for _ in range(reps):
            for _ in loop():
                pass
        return (time.process_time() - t0) / (reps * tokens)

    rounds = []
    for _ in range(ROUNDS):  # every kind in each round, so a drift of the host's speed hits them alike
        r = {
            "bare": bare(200, 200) * 1e6,
            "e200": engine(200, 100) * 1e6,
            "e2000": engine(2000, 10) * 1e6,
            "p200": product(200, 100) * 1e6,
        }
        r["marginal"] = (r["e2000"] * 2000 - r["e200"] * 200) / 1800
        r["fixed_ms"] = (r["e200"] * 200 - r["marginal"] * 200) / 1000
        r["ratio200"] = r["e200"] / r["bare"]
        r["ratio_marginal"] = r["marginal"] / r["bare"]
        rounds.append(r)

    def median(key: str) -> float:
        return statistics.median(r[key] for r in rounds)

    out = {
        "rounds": ROUNDS,
        "bare_us_per_token": round(median("bare"), 2),
        "engine_us_per_token_200tok_turn": round(median("e200"), 2),
        "engine_us_per_token_2000tok_turn": round(median("e2000"), 2),
        "engine_marginal_us_per_token": round(median("marginal"), 2),
        "engine_fixed_ms_per_turn": round(median("fixed_ms"), 2),
        "product_drive_us_per_token_200tok_turn": round(median("p200"), 2),
        "ratio_engine_200_vs_bare": round(median("ratio200"), 2),
        "ratio_engine_marginal_vs_bare": round(median("ratio_marginal"), 2),
        "ratio_engine_200_vs_bare_range": [
            round(min(r["ratio200"] for r in rounds), 2),
            round(max(r["ratio200"] for r in rounds), 2),
        ],
    }
    print(json.dumps(out))


def _run_engine(session, run_agent, sse) -> None:
    for i, (name, payload) in enumerate(run_agent(session)):
        sse.encode_json(name, payload, i)


if __name__ == "__main__":
    main()
