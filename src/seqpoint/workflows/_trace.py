"""Projections checked against recorded real runs (``seqpoint validate --trace``), and
speedups from two measurement files (``seqpoint speedup``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seqpoint._live import Reporter
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.executors import Executor
from seqpoint.measurements import Measurements, read_measurements
from seqpoint.measurements.metrics import INSTRUCTIONS, time_metric
from seqpoint.projection import Speedup
from seqpoint.reports import TraceRecord
from seqpoint.schedule import IterationSchedule, RunTrace, read_trace
from seqpoint.selection import SeqPoints, read_seqpoints
from seqpoint.workflows._campaign import Campaign
from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._sections import (
    BatchingSection,
    LengthsSection,
    ProjectionSection,
    ValidationSection,
)
from seqpoint.workflows._stages import read_run_schedule

__all__ = ["TraceValidation", "check_traces", "speedup_from_files", "validate_on_traces", "validate_trace"]

#: Columns that fix a micro-batch's shape, compared to tell two runs' schedules apart.
_SHAPE = ("batch_size", "seq_len", "tgt_len")
_SAME = "compare runs of the same schedule (same sampler, seed, epochs and batch size)."


@dataclass(frozen=True, kw_only=True)
class TraceValidation(TraceRecord):
    """A projection and the first-N estimate against recorded real runs."""

    folder: RunFolder | None = None
    """Where ``validate(cfg, traces=...)`` wrote it (None from :func:`validate_trace`)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON) of the comparison."""
        return {"n_iterations": self.n_iterations, "n_steps": self.n_steps, "n_points": self.n_points,
                **self.truth.to_dict(), "projected_metric": time_metric(self.projection.totals),
                "first_n": self.first_n, "first_n_s": self.first_n_s, "first_n_error": self.first_n_error,
                "window": None if self.window is None else self.window.to_dict(), "projection": self.projection.to_dict()}


def _as_trace(value: RunTrace | str | Path) -> RunTrace:
    return value if isinstance(value, RunTrace) else read_trace(value)


def check_traces(schedule: IterationSchedule, traces: Sequence[RunTrace]) -> None:
    """Raise InputError unless every trace is a run of ``schedule``, naming the first micro-batch
    that differs, both values and how to make them agree; cheap, so it runs before any profiling."""
    for n, trace in enumerate(traces):
        which, got = f"Trace {n + 1} of {len(traces)}", trace.to_schedule()
        if len(got) != len(schedule):
            raise InputError(f"{which} has {len(got)} micro-batches but the schedule has {len(schedule)}; {_SAME}")
        for col in _SHAPE:
            if (diff := np.flatnonzero(getattr(got, col) != getattr(schedule, col))).size:
                i = int(diff[0])
                raise InputError(f"{which} is not a run of this schedule: micro-batch {i} has {col} "
                                 f"{int(getattr(got, col)[i])}, the schedule {int(getattr(schedule, col)[i])}; "
                                 f"{_agree(schedule, col)}")


def _agree(schedule: IterationSchedule, col: str) -> str:
    """How to make a replay agree with a recorded run that differs in ``col``."""
    if schedule.meta.get("source") == "lhotse" and col != "batch_size":
        fix = (f"replay with schedule_from_sampler(..., rounding='ceil' or 'floor') if your features count frames "
               f"otherwise than {schedule.meta.get('rounding', 'round')!r}" if col == "seq_len" else
               "replay with schedule_from_sampler(..., target_fn=...) counting each cut's target as your model does")
        return f"the schedule is a lhotse replay: {fix}, or give the recorded trace as the schedule."
    return _SAME


def validate_trace(
    schedule_or_trace: IterationSchedule | RunTrace | str | Path, seqpoints: SeqPoints, measurements: Measurements,
    traces: RunTrace | str | Path | Sequence[RunTrace | str | Path], *, first_n: int = 10, rank: int | None = None,
    method: str = "weighted", confidence: float = 0.95,
) -> TraceValidation:
    """Compare the projection from SeqPoints, and first-N, with recorded real runs.

    ``schedule_or_trace`` is the run (one row per micro-batch; a trace stands for its own
    schedule); ``traces`` (two or more give the noise floor) are recorded runs of it; a
    ``window`` in ``measurements`` calibrates the cold term. ``first_n`` steps of the first
    trace make the first-N estimate; ``rank`` picks a rank of data-parallel traces. Errors are
    signed fractions against the mean recorded total. InputError for a trace that is not a run
    of the schedule or ``first_n < 1``."""
    from seqpoint.projection import project

    if isinstance(first_n, bool) or not isinstance(first_n, int) or first_n < 1:
        raise InputError(f"The 'first_n' parameter of validate_trace must be an int >= 1. Got {first_n!r}.")
    if traces is None:
        raise InputError("validate_trace got no run trace (None): a SeqPointCallback's .trace is None until "
                         "trainer.train() has ended; pass cb.trace after training, or a trace file's path.")
    items = [traces] if isinstance(traces, RunTrace | str | Path) else list(traces)
    if not items:
        raise InputError("validate_trace needs at least one recorded run trace.")
    runs = [t.for_rank(rank) if rank is not None else t for t in map(_as_trace, items)]
    schedule = (schedule_or_trace if isinstance(schedule_or_trace, IterationSchedule)
                else _as_trace(schedule_or_trace).to_schedule(rank))
    check_traces(schedule, runs)
    projection = project(schedule, seqpoints, measurements, method=method, confidence=confidence)
    steps = runs[0].step_times_s()
    first = float(steps[:first_n].mean() * steps.size)
    return TraceValidation(n_iterations=len(schedule), n_steps=int(steps.size), n_points=len(seqpoints),
                           projection=projection, measured_runs_s=tuple(t.total_time_s for t in runs),
                           first_n=min(first_n, int(steps.size)), first_n_s=first, window=measurements.window)


def speedup_from_files(
    schedule: IterationSchedule | str | Path, seqpoints: SeqPoints | str | Path, meas_a: Measurements | str | Path,
    meas_b: Measurements | str | Path, *, metric: str = "auto",
) -> Speedup:
    """Projected speedup ``T_a / T_b`` from two measurement sets of the same SeqPoints (objects or
    files; ``schedule`` may be a run trace), ``metric`` as for ``project_speedup``. InputError
    when a set lacks a SeqPoint's iteration."""
    from seqpoint.projection import check_fit, project_speedup

    def named(given: object, label: str) -> str:
        return label if isinstance(given, (IterationSchedule, SeqPoints, Measurements)) else str(given)

    sched = read_run_schedule(schedule)
    pts = seqpoints if isinstance(seqpoints, SeqPoints) else read_seqpoints(seqpoints)
    a = meas_a if isinstance(meas_a, Measurements) else read_measurements(meas_a)
    b = meas_b if isinstance(meas_b, Measurements) else read_measurements(meas_b)
    check_fit(sched, pts, names=(named(schedule, "the schedule"), named(seqpoints, "The SeqPoints"), ""))
    wanted = {p.iteration for p in pts.points}
    for name, given, ms in (("A", meas_a, a), ("B", meas_b, b)):
        have = {m.iteration for m in ms.measurements}
        if not wanted <= have:
            raise InputError(f"Measurements {name} ({named(given, 'in memory')}) lack SeqPoint iteration(s) "
                             f"{sorted(wanted - have)[:5]} of {named(seqpoints, 'the SeqPoints')}; measure both "
                             "configurations on the same SEQPOINTS.json ('seqpoint profile').")
    return project_speedup(sched, pts, a, b, metric=metric)


def validate_on_traces(cfg: RunConfig, traces: Sequence[RunTrace | str | Path], *, first_n: int = 10,
                       reporter: Reporter | None = None, executor: Executor | str | None = None) -> TraceValidation:
    """``validate(cfg, traces=...)``, ``seqpoint validate CONFIG --trace T [--trace T2]``:
    SeqPoints of the first trace's micro-batches (``[batching] rank`` picks a rank) measured per
    the config and checked by :func:`validate_trace`. A config that sets what a trace replaces is
    a ConfigError, lest a user reusing ``seqpoint run``'s config think the trace was checked
    against it."""
    if not traces:
        raise InputError("--trace needs at least one recorded run trace (seqpoint.integrations).")
    _check_trace_config(cfg)
    if cfg.profile.timer == INSTRUCTIONS:  # a recorded trace is in seconds
        raise ConfigError("seqpoint validate --trace compares with runs recorded in seconds, but [profile] timer = "
                          "\"instructions\" projects instructions: use a clock timer (wall) for it, or seqpoint "
                          "validate, which counts its full runs under callgrind too.")
    rank = cfg.batching.rank
    first = _as_trace(traces[0])
    ranks = len(first.ranks)
    if ranks > 1 and (rank is None or cfg.batching.world_size != ranks):
        raise InputError(f"Trace {traces[0]} holds ranks {first.ranks}, each running its own schedule; pick one "
                         f"with [batching] world_size = {ranks} and rank = R (--set batching.world_size={ranks} "
                         "--set batching.rank=R).")
    runs = [first, *map(_as_trace, traces[1:])]
    check_traces(first.to_schedule(rank), [t.for_rank(rank) if rank is not None else t for t in runs])
    folder = RunFolder.new(cfg.name + "-trace", cfg.report.out, command="validate --trace")
    c = Campaign(cfg, reporter=reporter, executor=executor, folder=folder, schedule=first.to_schedule(rank))
    result = dataclasses.replace(
        validate_trace(c.schedule, c.seqpoints, c.measure_seqpoints(), runs, first_n=first_n, rank=rank,
                       method=cfg.projection.method, confidence=cfg.projection.confidence), folder=folder)
    folder.write_json("trace_validation.json", result.to_dict())
    return result


#: Sections whose keys ``validate --trace`` does not read, with their defaults, and the keys it does read.
_NOT_READ = (("lengths", LengthsSection(), ()), ("batching", BatchingSection(), ("world_size", "rank")),
             ("projection", ProjectionSection(), ("method", "confidence")), ("validation", ValidationSection(), ()))


def _check_trace_config(cfg: RunConfig) -> None:
    """One line naming every key ``validate --trace`` would ignore, and what to do."""
    ignored = []
    for section, default, read in _NOT_READ:
        current = getattr(cfg, section)
        if keys := [f.name for f in dataclasses.fields(current)
                    if f.name not in read and getattr(current, f.name) != getattr(default, f.name)]:
            ignored.append(f"[{section}] {', '.join(keys)}")
    if ignored:
        raise ConfigError(f"validate --trace does not read {'; '.join(ignored)}: the trace's micro-batches are the run "
                          "and the recorded runs the truth. Remove these from the config (--trace reads [selection], "
                          "[workload], [profile], [report] out and [batching] world_size and rank, which pick one "
                          "rank of a data-parallel trace), or leave out --trace to validate by full runs.")
