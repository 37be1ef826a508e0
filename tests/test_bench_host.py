"""The benchmark's pure logic: the host's speed, what counts as held, the floor's figures, the sides' order."""

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


def _streams(server, n, *, peak, gap=10.0, errors=0, completed=None, cpu=50.0, ttft=100.0):
    return {
        "scenario": "streams",
        "server": server,
        "side": server,
        "n": n,
        "completed": n if completed is None else completed,
        "errors": errors,
        "streams_peak": peak,
        "gap_added_p99_ms": gap,
        "server_cpu_us_per_token": cpu,
        "ttft_p99_ms": ttft,
    }


def test_a_level_is_held_only_with_all_n_streaming_at_once_within_the_gap_target():
    from bench.streams import held

    lines = [
        _streams("new", 1000, peak=900),  # not all streaming at once: not held at this level
        _streams("bare", 1000, peak=1000),
        _streams("asgi", 1000, peak=1000, gap=500.0),  # over the gap target
        _streams("new", 500, peak=500),
        _streams("bare", 2000, peak=2000),
        _streams("asgi", 500, peak=500, errors=5, completed=495),
    ]
    assert {s: held(lines, s) for s in ("new", "bare", "asgi")} == {"new": 500, "bare": 2000, "asgi": 0}


def _floor(lines, levels=(100, 1000)):
    from bench.floor import floor

    return {r["figure"].split(" (")[0]: r for r in floor(lines, list(levels))}


def test_the_floor_compares_new_with_old_at_n_1000():
    lines = [
        _streams("old", 1000, peak=1000, cpu=70.0, ttft=2900.0),
        _streams("new", 1000, peak=1000, cpu=60.0, ttft=3000.0),
        _streams("old", 100, peak=100, cpu=90.0),
        _streams("new", 100, peak=100, cpu=95.0),  # another level: not the reference
        {"scenario": "turncost_sqlite", "side": "old", "cpu_ms_per_turn": 10.0},
        {"scenario": "turncost_sqlite", "side": "new", "cpu_ms_per_turn": 15.0},
        {"scenario": "turncost_pg", "side": "old", "cpu_ms_per_turn": 10.0},
        {"scenario": "turncost_pg", "side": "new", "cpu_ms_per_turn": 15.1},
        {"scenario": "engine", "side": "old", "ratio_marginal": 1.5},
        {"scenario": "engine", "side": "new", "ratio_marginal": 1.3},
    ]
    f = _floor(lines)
    cpu = f["server CPU per streamed token at N = 1000"]
    assert (cpu["old"], cpu["new"], cpu["met"]) == (70.0, 60.0, True)
    held = f["streams held on one worker"]
    assert (held["old"], held["new"], held["met"]) == (1000, 1000, True)
    ttft = f["first-token p99 at N = 1000"]
    assert (ttft["old"], ttft["new"], ttft["met"]) == (2900.0, 3000.0, False)
    assert f["CPU per turn, SQLite"]["met"] is True  # 1.5x: at the bound
    assert f["CPU per turn, PostgreSQL"]["met"] is False  # 1.51x
    assert "1.51×" in f["CPU per turn, PostgreSQL"]["target"]
    assert (f["engine CPU per marginal token ÷ the bare loop's"]["met"]) is True


def test_a_side_that_failed_or_was_not_run_is_shown_as_missing_not_as_a_miss():
    lines = [
        _streams("new", 1000, peak=1000),
        {"scenario": "streams", "side": "old", "failed": "server exited"},
        {"scenario": "turncost_pg", "side": "new", "failed": "ImportError"},
    ]
    f = _floor(lines)
    assert f["server CPU per streamed token at N = 1000"]["met"] is None
    assert f["streams held on one worker"]["old"] is None
    assert f["streams held on one worker"]["met"] is True
    assert f["CPU per turn, PostgreSQL"]["new"] is None and f["CPU per turn, PostgreSQL"]["met"] is None


def test_a_quick_run_holds_itself_to_its_largest_level():
    f = _floor([_streams("new", 60, peak=60), _streams("old", 60, peak=40)], levels=(20, 60))
    held = f["streams held on one worker"]
    assert (held["old"], held["new"], held["target"], held["met"]) == (0, 60, "new ≥ 60", True)


def test_the_marginal_token_is_the_difference_of_a_long_and_a_one_token_turn():
    from bench.engine import figures, summary

    LONG = 200
    # per-turn CPU seconds: the bare loop 2 µs a token over 1 µs fixed; the engine 3 µs over 400 µs
    per_turn = {
        "bare_1": 1e-6 + 2e-6,
        "bare_long": 1e-6 + 2e-6 * LONG,
        "engine_1": 400e-6 + 3e-6,
        "engine_long": 400e-6 + 3e-6 * LONG,
    }
    r = figures(per_turn, LONG)
    assert round(r["bare_marginal_us"], 6) == 2.0 and round(r["engine_marginal_us"], 6) == 3.0
    assert round(r["ratio_marginal"], 6) == 1.5  # the fixed 400 µs a turn does not count
    assert round(r["engine_turn_ms"], 3) == 0.403
    other = figures({**per_turn, "engine_long": 400e-6 + 4e-6 * LONG}, LONG)
    s = summary([r, other, r])
    assert s["ratio_marginal"] == 1.5 and s["ratio_marginal_range"] == [1.5, 2.0] and len(s["rounds"]) == 3


def test_the_sides_take_turns_going_first():
    from bench.sides import order

    assert [order(i, ("old", "new")) for i in range(3)] == [("old", "new"), ("new", "old"), ("old", "new")]


def test_the_baseline_is_the_flag_then_the_environment_then_the_file(monkeypatch):
    from bench.sides import baseline_ref

    monkeypatch.delenv("BENCH_BASELINE", raising=False)
    in_file = baseline_ref()
    assert in_file and not in_file.startswith("#")
    monkeypatch.setenv("BENCH_BASELINE", "HEAD~3")
    assert baseline_ref() == "HEAD~3"
    assert baseline_ref("v1.0") == "v1.0"


def test_a_level_the_bare_app_missed_too_is_flagged_as_a_host_stall():
    lines = [
        _streams("old", 1000, peak=1000),
        _streams("new", 1000, peak=1000, gap=160.0),
        _streams("bare", 1000, peak=1000, gap=180.0),
        _streams("bare", 100, peak=100),
    ]
    note = _floor(lines)["streams held on one worker"]["note"]
    assert note.startswith("the bare gevent app missed the gap rule too at N = 1,000:")
    assert _floor(lines[:2] + lines[3:])["streams held on one worker"]["note"] is None
