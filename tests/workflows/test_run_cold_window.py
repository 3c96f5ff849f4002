"""``[profile] cold_window``: the run's first steps timed in sequence measure the in-run gap."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from seqpoint.exceptions import ConfigError
from seqpoint.measurements import read_measurements
from seqpoint.workflows import ProfileSection, RunConfig, run


def test_cold_window_measures_the_in_run_gap_and_is_counted(tmp_path: Path, bert_config) -> None:
    def cfg(window: int) -> RunConfig:
        return bert_config(tmp_path / f"w{window}", f"profile.cold_window={window}", name="w")

    plain, windowed = run(cfg(0)), run(cfg(8))
    assert plain.projection.cold_term["method"] == "first_step" and plain.projection.in_run_ratio is None
    proj = windowed.projection
    assert proj.cold_term["method"] == "first_step" and proj.in_run_ratio is not None
    assert proj.in_run_gap == pytest.approx(abs(proj.in_run_ratio - 1) * proj.totals["run_time_s"])
    window = read_measurements(windowed.folder.file("measurements.json")).window
    assert window is not None and len(window.times_s) == 8 and min(window.times_s) > 0
    # The window's 8 steps are profiling too: the reduction factor says so.
    n = len(windowed.schedule)
    assert n / plain.reduction + 8 == pytest.approx(n / windowed.reduction)


def test_cold_window_is_bounded_and_on_by_default_with_a_clock() -> None:
    with pytest.raises(ConfigError, match="cold_window"):
        ProfileSection(cold_window=-1)
    assert ProfileSection().cold_window is None and ProfileSection().window_steps == 10
    assert ProfileSection(timer="instructions").window_steps == 0  # unset: no window to count
    assert ProfileSection(metrics=("flops",)).window_steps == 0 and ProfileSection(cold_window=0).window_steps == 0
    with pytest.raises(ConfigError, match="cold_window times steps in seconds"):
        ProfileSection(cold_window=3, timer="instructions")


def test_the_window_steps_a_workload_that_takes_lengths_with_the_real_ones() -> None:
    import numpy as np

    from seqpoint.executors import LocalExecutor
    from seqpoint.measurements import Measurements, StepWindow
    from seqpoint.profiling import Profiler
    from seqpoint.schedule import IterationSchedule, RowLengths
    from seqpoint.workflows import Campaign, RunConfig
    from seqpoint.workloads import BatchShape

    got: list[list[object]] = []

    class Windowless(Profiler):
        """A profiler that keeps the window's steps instead of timing them."""

        def window(self, steps, *, start, timer):  # type: ignore[no-untyped-def]
            got.append(list(steps))
            sigs = tuple(s.signature if isinstance(s, BatchShape) else s for s in steps)
            return StepWindow(start=start, signatures=sigs, times_s=(1.0,) * len(sigs))

    class Local(LocalExecutor):
        def profiler(self, job, **kw):  # type: ignore[no-untyped-def, override]
            return Windowless(job.workload)

    schedule = IterationSchedule.from_columns({"batch_size": [2, 2, 2], "seq_len": [8, 6, 8]}).with_rows(
        RowLengths(offsets=np.array([0, 2, 4, 6]), lengths=np.array([8, 3, 6, 6, 5, 8])))

    class Takes:
        name, takes_batch_shape = "takes", True

    class Signatures:
        name = "sigs"

    cfg, empty = RunConfig(profile=ProfileSection(cold_window=2)), Measurements(workload="w")
    window = Campaign(cfg, schedule=schedule, workload=Takes(), executor=Local()).with_window(empty).window  # type: ignore[arg-type]
    assert window is not None and window.signatures == ((2, 8, 0), (2, 6, 0))
    assert [s.lengths.tolist() for s in got[0]] == [[8, 3], [6, 6]]  # type: ignore[attr-defined]
    Campaign(cfg, schedule=schedule, workload=Signatures(), executor=Local()).with_window(empty)  # type: ignore[arg-type]
    assert got[1] == [(2, 8, 0), (2, 6, 0)]
