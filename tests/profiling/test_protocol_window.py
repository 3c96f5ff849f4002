"""A timed in-sequence window of a run, stepped in a fresh process."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from seqpoint.exceptions import ConfigError
from seqpoint.measurements import Measurements
from seqpoint.profiling import ProfileConfig, Profiler, profile_points
from seqpoint.projection import project
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoint, SeqPoints
from seqpoint.workloads import load_workload


def test_window_times_every_step_and_calibrates_the_projection() -> None:
    w = load_workload("bert:tiny", {"threads": 1})
    lengths = [16, 24, 16, 32, 24, 16, 40, 32]
    schedule = IterationSchedule.from_columns({"batch_size": [2] * 8, "seq_len": lengths})
    sigs = [(2, sl, 0) for sl in lengths]
    window = Profiler(w).window(sigs[:6], start=0, timer="wall")
    assert window.signatures == tuple(sigs[:6]) and len(window.times_s) == 6
    assert all(t > 0 for t in window.times_s)
    pts = SeqPoints(method="t", n_iterations=8, points=tuple(
        SeqPoint(iteration=i, batch_size=2, seq_len=lengths[i], weight=w8)
        for i, w8 in ((0, 3.0), (3, 2.0), (6, 3.0))))
    ms = profile_points(w, pts, ProfileConfig(repeats=2), progress=False)
    with_window = Measurements(workload=ms.workload, measurements=ms.measurements, window=window)
    res = project(schedule, pts, with_window, cold="window")
    assert res.cold_term["method"] == "window" and res.in_run_ratio is not None
    assert res.cold_term["samples"] == 3  # shapes 16, 24 and 32 are new in the window
    assert res.cold_term["in_run_ratio"] > 0
    assert res.totals["run_time_s"] >= res.totals["time_s"]


def test_a_window_of_a_workload_that_does_not_pickle_is_one_line() -> None:
    import threading

    class Mine:
        name = "mine:x"

        def __init__(self) -> None:
            self.lock = threading.Lock()

    with pytest.raises(ConfigError, match=r"^A step window .* Mine does not pickle .*cold_window = 0\)\.$"):
        Profiler(Mine()).window([(2, 8, 0)], start=0, timer="wall")  # type: ignore[arg-type]
