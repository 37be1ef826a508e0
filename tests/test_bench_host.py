"""The benchmark report says how fast its host was, so two runs on different hosts are not misread."""

from __future__ import annotations

from bench.calibrate import reference_cpu_ms
from bench.report import _speed
from bench.run import steal_pct


def test_steal_is_the_share_of_the_core_the_hypervisor_kept():
    before = [100, 0, 50, 800, 0, 0, 0, 50]
    after = [400, 0, 150, 1300, 0, 0, 0, 150]  # 1,000 jiffies: 300 user, 100 system, 500 idle, 100 stolen
    assert steal_pct(before, after) == 10.0
    assert steal_pct([], after) is None  # no /proc/stat (another OS): said, not guessed
    assert steal_pct(before, before) is None


def test_the_report_names_the_reference_workload_and_both_timings():
    line = _speed({"reference_cpu_ms_start": 180.4, "reference_cpu_ms_end": 240.0, "server_core_steal_pct": 2.5})[0]
    assert "180 ms" in line and "240 ms" in line and "2.5%" in line and "bench.calibrate" in line
    assert _speed(None) == []  # a run saved before the figure existed


def test_the_reference_workload_takes_measurable_time():
    assert reference_cpu_ms(repeat=1) > 1.0


def _streams(scenario, n, *, peak, gap=10.0, errors=0, completed=None):
    return {
        "scenario": scenario,
        "n": n,
        "completed": n if completed is None else completed,
        "errors": errors,
        "streams_peak": peak,
        "gap_added_p99_ms": gap,
        "server_cpu_s_per_1k_tokens": 0.05,
        "rss_kb_per_stream": 50.0,
    }


def test_the_held_ratios_compare_the_streams_each_server_held_at_n_1000():
    from bench.run import summarize

    lines = [
        _streams("django", 1000, peak=900),  # not all streaming at once: not held at this level
        _streams("bare", 1000, peak=1000),
        _streams("asgi", 1000, peak=800, gap=500.0),  # over the gap target: holds none
        _streams("django", 2000, peak=1100),
        _streams("bare", 2000, peak=2000),
        _streams("asgi", 2000, peak=700, errors=5, completed=1995),
    ]
    s = summarize(lines, [1000, 2000])
    assert s["held_at_ref"] == {"django": 900, "bare": 1000, "asgi": 0}
    assert s["held_at_ref_vs_bare"] == 0.9
    assert s["held_at_ref_vs_asgi"] is None  # the ASGI app held none: no ratio to invent
    assert s["held"] == {"django": 0, "bare": 2000, "asgi": 0}  # capacity: all N at once, every level
