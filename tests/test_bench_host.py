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
