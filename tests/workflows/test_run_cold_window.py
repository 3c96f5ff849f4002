"""``[profile] cold_window``: the run's first steps timed in sequence calibrate the cold term."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from seqpoint.exceptions import ConfigError
from seqpoint.measurements import read_measurements
from seqpoint.workflows import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    ReportSection,
    RunConfig,
    SelectionSection,
    WorkloadSection,
    run,
)


def test_cold_window_calibrates_and_is_counted(tmp_path: Path) -> None:
    def cfg(window: int) -> RunConfig:
        return RunConfig(
            name="w",
            lengths=LengthsSection(source="bundled:wikitext-2-valid", max_samples=160),
            batching=BatchingSection(policy="fixed", params={"batch_size": 8}),
            selection=SelectionSection(n_points=3),
            workload=WorkloadSection(name="bert:tiny", set={"threads": 1}),
            profile=ProfileSection(warmup=1, repeats=2, metrics=("time",), use_cache=False,
                                   cold_window=window),
            report=ReportSection(out=str(tmp_path / f"run{window}"), plots=False, html=False),
        )

    plain, windowed = run(cfg(0), progress=False), run(cfg(8), progress=False)
    assert plain.projection.cold_term["method"] == "first_step"
    term = windowed.projection.cold_term
    assert term["method"] == "window" and term["samples"] >= 1 and 0 <= term["share"] < 1
    window = read_measurements(windowed.folder.file("measurements.json")).window
    assert window is not None and len(window.times_s) == 8 and min(window.times_s) > 0
    # The window's 8 steps are profiling too: the reduction factor says so.
    n = len(windowed.schedule)
    assert n / plain.reduction + 8 == pytest.approx(n / windowed.reduction)


def test_cold_window_is_bounded() -> None:
    with pytest.raises(ConfigError, match="cold_window"):
        ProfileSection(cold_window=-1)
