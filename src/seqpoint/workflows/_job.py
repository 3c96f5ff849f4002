"""One call for a user's own job (:func:`project_job`; ``project_trainer`` for a Trainer):
SeqPoints, profiling, the projection with its interval, the break-even, and the check
against recorded runs with their noise floor."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqpoint._live import Reporter
from seqpoint.exceptions import InputError
from seqpoint.executors import Executor
from seqpoint.measurements import Measurements
from seqpoint.measurements.metrics import time_metric
from seqpoint.projection import Projection
from seqpoint.reports import fmt_duration, fmt_pct
from seqpoint.schedule import IterationSchedule, RunTrace, read_trace
from seqpoint.selection import SeqPoints
from seqpoint.validation import break_even
from seqpoint.workflows._trace import TraceValidation, check_traces, validate_trace
from seqpoint.workloads import Workload, describe

__all__ = ["JobProjection", "project_job"]

Traces = Sequence[RunTrace | str | Path]


@dataclass(frozen=True)
class JobProjection:
    """A job's projection from its SeqPoints, what profiling them cost, and the check
    against recorded runs when there were any."""

    schedule: IterationSchedule
    """The run: one row per micro-batch."""
    seqpoints: SeqPoints
    """The iterations profiled, with their weights."""
    measurements: Measurements
    """Their measurements."""
    projection: Projection
    """The whole run projected from them."""
    profiling_wall_s: float
    """Wall seconds profiling took: worker start-up, warm-up, timed steps, the window (the
    run table's ``ProfilingSaving.profiling_s`` counts the steps alone)."""
    processes: int
    """Worker processes the SeqPoints were timed in (1: this process)."""
    validation: TraceValidation | None
    """Projection and first-N against the recorded runs (noise floor with two or more)."""

    @property
    def projected_s(self) -> float:
        """Projected seconds of the whole run (cold steps included when measured)."""
        return float(self.projection.totals[time_metric(self.projection.totals)])

    @property
    def interval_s(self) -> tuple[float, float]:
        """Its 95% interval, seconds."""
        lo, hi = self.projection.interval[time_metric(self.projection.totals)]
        return float(lo), float(hi)

    @property
    def profiling_share(self) -> float:
        """Profiling seconds over one projected run's."""
        return self.profiling_wall_s / self.projected_s if self.projected_s > 0 else math.inf

    @property
    def break_even(self) -> float:
        """Iterations of this run's mix past which profiling costs less than one run."""
        return break_even(self.profiling_wall_s, self.projected_s, len(self.schedule))

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON)."""
        return {"n_iterations": len(self.schedule), "n_points": len(self.seqpoints),
                "projected_s": self.projected_s, "interval_s": list(self.interval_s),
                "profiling_wall_s": self.profiling_wall_s, "profiling_share": self.profiling_share,
                "break_even": self.break_even, "processes": self.processes,
                "projection": self.projection.to_dict(),
                "validation": None if self.validation is None else self.validation.to_dict()}

    def summary(self) -> str:
        """What a user reads: the projection, its interval, the break-even and the check."""
        lo, hi = self.interval_s
        where = f"{self.processes} worker processes" if self.processes > 1 else "this process"
        half = (hi - lo) / 2 / self.projected_s if self.projected_s > 0 else math.nan
        lines = [
            f"{len(self.schedule):,} iterations projected from {len(self.seqpoints)} SeqPoints timed in {where}",
            f"projected time    {fmt_duration(self.projected_s)}   95% interval {fmt_duration(lo)} … "
            f"{fmt_duration(hi)} (± {100 * half:.2f}%)",
        ]
        pays = ("saves time" if self.profiling_share < 1 else "costs more than running the job once")
        lines.append(f"profiling took    {fmt_duration(self.profiling_wall_s)} = {self.profiling_share:.2f}× one run: it "
                     f"{pays} here, and pays off on runs longer than {self.break_even:,.0f} iterations")
        v = self.validation
        if v is not None:
            t = v.truth
            runs = ", ".join(fmt_duration(x) for x in t.runs_s)
            floor = (f"noise floor {fmt_pct(t.noise_floor).lstrip('+')}" if len(t.runs_s) >= 2
                     else "one run: record a second for the noise floor")
            inside = "inside" if lo <= t.measured_s <= hi else "OUTSIDE"
            lines += [f"recorded runs     {runs} ({floor})",
                      f"error             {fmt_pct(t.error)} (the recorded mean is {inside} the interval); "
                      f"first {v.first_n} steps: {fmt_pct(v.first_n_error)}"]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def project_job(
    schedule: IterationSchedule | RunTrace | str | Path, workload: Workload | str, *, traces: Traces | None = None,
    n_points: int = 10, processes: int = 1, cold_window: int | None = None, first_n: int = 10, progress: bool = False,
    executor: Executor | str = "local",
) -> JobProjection:
    """Project a job's whole run from ``n_points`` SeqPoints, and check it against recorded runs.

    ``schedule`` is the run's micro-batches (a replay, a schedule file or a run trace);
    ``workload`` a Workload, ``path/to/file.py:function``, ``module:function`` or a registered
    ``name[:preset]``; ``traces`` recorded runs of the schedule, whose mean checks the
    projection (two or more give the noise floor), ``first_n`` steps of the first making the
    first-N estimate. ``processes``, ``cold_window`` and ``executor`` are ``[profile]``'s keys.
    ``print(result)`` shows the projection, its interval, what profiling cost against one run
    and, with traces, the error and noise floor.
    """
    from seqpoint.projection import project
    from seqpoint.workflows._campaign import Campaign
    from seqpoint.workflows._config import RunConfig
    from seqpoint.workflows._sections import ProfileSection, SelectionSection, WorkloadSection
    from seqpoint.workflows._stages import read_run_schedule

    sched = read_run_schedule(schedule)
    if not isinstance(workload, str | Workload):
        lacks = [a for a in ("name", "config", "make_batch", "step") if not hasattr(workload, a)]
        raise InputError(f"project_job needs a workload or a workload spec; a {type(workload).__name__} lacks "
                         f"{', '.join(lacks)} (seqpoint.workloads.Workload).")
    runs = None if traces is None else [t if isinstance(t, RunTrace) else read_trace(t) for t in traces]
    check_traces(sched, runs or [])  # before any step: a run of another schedule is refused now, not after profiling
    # Three timed steps a worker: with one or two, a worker's median is one noisy step.
    cfg = RunConfig(selection=SelectionSection(n_points=n_points, proxy="attention"),
                    workload=WorkloadSection(name=workload) if isinstance(workload, str)
                    else WorkloadSection.given(describe(workload).name),
                    profile=ProfileSection(metrics=("time",), processes=processes, repeats=max(5, 3 * processes),
                                           cold_window=cold_window, use_cache=False))
    c = Campaign(cfg, reporter=Reporter(progress=progress), executor=executor, schedule=sched,
                 workload=None if isinstance(workload, str) else workload)
    points = c.seqpoints
    start = time.perf_counter()
    measured = c.measure_seqpoints()
    spent = time.perf_counter() - start
    checked = validate_trace(sched, points, measured, runs, first_n=first_n) if runs else None
    projection = project(sched, points, measured, method="weighted") if checked is None else checked.projection
    return JobProjection(schedule=sched, seqpoints=points, measurements=measured, projection=projection,
                         profiling_wall_s=spent, processes=processes, validation=checked)
