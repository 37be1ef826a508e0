"""The performance floor of a change: four figures, old and new, from one run's JSON lines.

1. server CPU per streamed token at the reference level (N = 1,000): new <= old;
2. streams held on one worker (all N streaming at once, every turn done, p99 added gap <= 50 ms)
   >= 1,000, and the first-token p99 at the reference level: new <= old;
3. CPU per turn (`bench.turncost`) on SQLite and on PostgreSQL: new <= 1.5x old;
4. CPU per marginal token of the engine (`bench.engine`): <= 1.3x the bare loop's.
"""

from __future__ import annotations

from bench.streams import held, held_at

HELD_TARGET = 1000
TURN_RATIO = 1.5
MARGINAL_RATIO = 1.3


def reference_level(levels: list[int]) -> int:
    return HELD_TARGET if HELD_TARGET in levels else max(levels)


def _one(lines: list[dict], **match) -> dict | None:
    return next((r for r in lines if all(r.get(k) == v for k, v in match.items()) and "failed" not in r), None)


def _get(row: dict | None, key: str):
    return None if row is None else row.get(key)


def _le(new, bound) -> bool | None:
    return None if new is None or bound is None else new <= bound


def _ratio(a, b) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def floor(lines: list[dict], levels: list[int]) -> list[dict]:
    """One row per figure: name, old, new, target, met (None where a side is missing), digits to show."""
    ref = reference_level(levels)
    streams = [r for r in lines if r["scenario"] == "streams" and "failed" not in r]
    old_s, new_s = _one(streams, server="old", n=ref), _one(streams, server="new", n=ref)
    held_target = min(HELD_TARGET, max(levels))
    rows = []
    cpu_old, cpu_new = _get(old_s, "server_cpu_us_per_token"), _get(new_s, "server_cpu_us_per_token")
    rows.append(
        {
            "figure": f"server CPU per streamed token at N = {ref} (µs)",
            "old": cpu_old,
            "new": cpu_new,
            "target": "new ≤ old",
            "met": _le(cpu_new, cpu_old),
            "digits": 1,
        }
    )
    h_old, h_new = held(streams, "old"), held(streams, "new")
    rows.append(
        {
            "figure": "streams held on one worker (all at once, 0 errors, p99 added gap ≤ 50 ms)",
            "old": h_old if old_s else None,
            "new": h_new if new_s else None,
            "target": f"new ≥ {held_target:,}",
            "met": (h_new >= held_target) if new_s else None,
            "digits": 0,
            "note": _host_stalled(streams, levels),
        }
    )
    t_old, t_new = _get(old_s, "ttft_p99_ms"), _get(new_s, "ttft_p99_ms")
    rows.append(
        {
            "figure": f"first-token p99 at N = {ref} (ms)",
            "old": t_old,
            "new": t_new,
            "target": "new ≤ old",
            "met": _le(t_new, t_old),
            "digits": 0,
        }
    )
    for db, name in (("sqlite", "SQLite"), ("pg", "PostgreSQL")):
        o = _get(_one(lines, scenario=f"turncost_{db}", side="old"), "cpu_ms_per_turn")
        n = _get(_one(lines, scenario=f"turncost_{db}", side="new"), "cpu_ms_per_turn")
        rows.append(
            {
                "figure": f"CPU per turn, {name} (`bench.turncost`, ms)",
                "old": o,
                "new": n,
                "target": f"new ≤ {TURN_RATIO}× old" + (f" (now {_ratio(n, o)}×)" if _ratio(n, o) else ""),
                "met": _le(n, None if o is None else TURN_RATIO * o),
                "digits": 2,
            }
        )
    eo, en = _one(lines, scenario="engine", side="old"), _one(lines, scenario="engine", side="new")
    rows.append(
        {
            "figure": "engine CPU per marginal token ÷ the bare loop's (`bench.engine`)",
            "old": _get(eo, "ratio_marginal"),
            "new": _get(en, "ratio_marginal"),
            "target": f"new ≤ {MARGINAL_RATIO}×",
            "met": _le(_get(en, "ratio_marginal"), MARGINAL_RATIO),
            "digits": 2,
        }
    )
    return rows


def _host_stalled(streams: list[dict], levels: list[int]) -> str | None:
    """Where the bare app (no project code, a few µs a token) missed the gap rule too, the host
    stalled the worker in that minute: a product's miss at that level says nothing of its code."""
    missed = [n for n in levels if (b := _one(streams, server="bare", n=n)) and held_at(b) < n]
    if not missed:
        return None
    at = ", ".join(f"{n:,}" for n in missed)
    return (
        f"the bare gevent app missed the gap rule too at N = {at}: the host stalled in that minute; "
        f"re-measure with `python -m bench.run --levels <N> --scenarios streams`."
    )
