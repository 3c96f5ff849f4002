"""Counts of the ``instructions`` timer project exactly as seconds do: the same weighted totals,
cold-step term, intervals and speedups, under the names of their own unit."""

import dataclasses

import pytest

from seqpoint.measurements import Measurement, Measurements
from seqpoint.projection import project, project_speedup
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoint, SeqPoints

SL = [10, 20, 30, 40, 50, 60]
#: The clock's names and the count's, one to one.
RENAME = {"time_s": "instructions", "run_time_s": "run_instructions",
          "first_occurrence_s": "first_occurrence_instructions"}


def _setup(scale: float = 1.0) -> tuple[IterationSchedule, SeqPoints, Measurements]:
    s = IterationSchedule.from_columns({"batch_size": [4] * 12, "seq_len": SL + SL})
    pts = SeqPoints(method="t", n_iterations=12, points=tuple(
        SeqPoint(iteration=r, batch_size=4, seq_len=SL[r], weight=3.0) for r in (0, 2, 3, 5)))
    ms = []
    for p in pts.points:
        steady = scale * 1e3 * p.seq_len
        reps = [steady * (1 + d) for d in (-0.01, 0.0, 0.02)]
        ms.append(Measurement(iteration=p.iteration, batch_size=4, seq_len=p.seq_len,
                              metrics={"time_s": steady, "time_s_first": 1.4 * steady, "time_s_iqr": 0.01 * steady,
                                       "repeats": 3.0},
                              samples={"time_s": reps, "time_s_processes": [steady, 1.01 * steady]}))
    return s, pts, Measurements(workload="w", measurements=tuple(ms))


def _counted(ms: Measurements) -> Measurements:
    """The same values under the instructions timer's names (``instructions``, ``instructions_first`` ...)."""
    def rename(k: str) -> str:
        return "instructions" + k[len("time_s"):] if k.startswith("time_s") else k

    return dataclasses.replace(ms, measurements=tuple(
        dataclasses.replace(m, metrics={rename(k): v for k, v in m.metrics.items()},
                            samples={rename(k): v for k, v in m.samples.items()})
        for m in ms.measurements))


def test_counts_project_as_seconds_do_under_their_own_names() -> None:
    s, pts, ms = _setup()
    clock, counts = project(s, pts, ms), project(s, pts, _counted(ms))
    assert set(clock.totals) == set(RENAME)
    assert set(counts.totals) == set(RENAME.values())
    assert "time_s" not in counts.totals and "run_time_s" not in counts.totals
    for old, new in RENAME.items():
        assert counts.totals[new] == pytest.approx(clock.totals[old])
        assert counts.interval[new] == pytest.approx(clock.interval[old])
    assert counts.totals["first_occurrence_instructions"] > 0  # the cold-step term, in instructions
    assert counts.cold_term == clock.cold_term and counts.cold_steps == clock.cold_steps
    assert counts.processes == clock.processes == 2
    assert counts.process_totals["run_instructions"] == pytest.approx(clock.process_totals["run_time_s"])


def test_asking_for_the_whole_run_in_instructions_projects_the_step_count() -> None:
    s, pts, ms = _setup()
    p = project(s, pts, _counted(ms), metrics=["run_instructions"])
    assert set(p.totals) == {"instructions", "first_occurrence_instructions", "run_instructions"}


def test_speedup_in_instructions_compares_the_whole_run() -> None:
    s, pts, a = _setup()
    _, _, b = _setup(scale=0.5)
    clock = project_speedup(s, pts, a, b)
    counts = project_speedup(s, pts, _counted(a), _counted(b))
    assert counts.metric == "run_instructions" and clock.metric == "run_time_s"
    assert counts.value == pytest.approx(2.0) == clock.value
    assert counts.interval == pytest.approx(clock.interval)
    assert counts.steady_value == pytest.approx(clock.steady_value)
