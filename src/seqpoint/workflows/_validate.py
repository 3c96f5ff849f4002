"""``seqpoint validate``: the projection and every baseline against the ground truth, the
schedule (or a stated part) executed in order twice or more, for the noise floor.

With ``[profile] processes > 1`` the full runs are timed between the protocol's worker
processes, and the steady-state truth (every signature) among the SeqPoints in them, so a
drift of a shared machine's speed (5-8% in ten minutes) is not read as the method's error.
Deterministic metrics (FLOPs, a roofline time) are checked against their exact totals.
With ``[profile] timer = "instructions"`` the full runs are counted under callgrind, every
step, in the projection's unit (instructions): a truth without a clock's noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from seqpoint._live import Reporter
from seqpoint.exceptions import ConfigError
from seqpoint.executors import Executor
from seqpoint.measurements import Measurements
from seqpoint.measurements.metrics import INSTRUCTIONS, relative_error, step_metric, time_metric
from seqpoint.profiling import WorkloadState
from seqpoint.projection import Projection
from seqpoint.reports import Baseline, ExactCheck, SteadyTruth, ValidationRecord
from seqpoint.schedule import IterationSchedule, RunTrace
from seqpoint.selection import weighted_projection
from seqpoint.validation import ErrorCurve, FullRun, error_vs_k, run_full_fresh
from seqpoint.workflows._campaign import Campaign
from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._stages import choose_points, signature_shapes
from seqpoint.workflows._trace import TraceValidation, validate_on_traces
from seqpoint.workloads import Workload

__all__ = ["EXACT_METRICS", "ValidationResult", "exact_costs", "interleave_plan", "timed_full_runs", "validate"]

#: Deterministic metrics validated against exact totals (from ``count_point``).
EXACT_METRICS = ("flops", "roofline_h100_s")


@dataclass(kw_only=True)
class ValidationResult(ValidationRecord):
    """Projection and baselines compared with measured full runs, and where they were written."""

    config: RunConfig
    folder: RunFolder

    def to_dict(self) -> dict[str, Any]:
        """What ``validation.json`` and ``seqpoint validate --json`` hold."""
        return {
            "n_iterations": len(self.schedule),
            "n_points": len(self.seqpoints),
            **self.truth.to_dict(),
            "runs_interleaved": self.full.interleaved,
            "projected_metric": time_metric(self.projection.totals),
            "reduction_factor": self.reduction,
            "baselines": {k: v.to_dict() for k, v in self.baselines.items()},
            "exact": {k: v.to_dict() for k, v in self.exact.items()},
            "steady": {} if self.steady is None else self.steady.to_dict(),
            "curves_time": {k: v.to_dict() for k, v in self.curves_time.items()},
            "curves_exact": {k: v.to_dict() for k, v in self.curves_exact.items()},
            "projection": self.projection.to_dict(),
        }


def exact_costs(workload: Workload, schedule: IterationSchedule, *, reporter: Reporter | None = None,
                state: WorkloadState | None = None) -> dict[str, NDArray[np.float64]]:
    """Per-iteration ``EXACT_METRICS`` of every unique signature: counted, or a
    per-operator fit verified on held-out signatures (see ``seqpoint.profiling.exact_totals``);
    ``state`` keeps the counts (the campaign's profiler's)."""
    from seqpoint.profiling import exact_signature_costs

    sig, _, inverse = schedule.unique_signatures()
    with (reporter or Reporter(progress=False)).bar("exact FLOPs per signature", sig.shape[0], transient=True) as tick:
        per_sig = exact_signature_costs(workload, sig, progress=lambda: tick(1, None),
                                        shapes=signature_shapes(workload, schedule), state=state)[0]
    return {m: np.asarray(per_sig[m], dtype=np.float64)[inverse] for m in EXACT_METRICS}


@overload
def validate(cfg: RunConfig, *, reporter: Reporter | None = None, executor: Executor | str | None = None,
             ks: tuple[int, ...] | None = None, exact: bool = True, traces: None = None) -> ValidationResult: ...
@overload
def validate(cfg: RunConfig, *, reporter: Reporter | None = None, executor: Executor | str | None = None,
             traces: Sequence[RunTrace | str | Path], first_n: int | None = None) -> TraceValidation: ...
def validate(
    cfg: RunConfig, *, reporter: Reporter | None = None, executor: Executor | str | None = None,
    ks: tuple[int, ...] | None = None, exact: bool = True, traces: Sequence[RunTrace | str | Path] | None = None,
    first_n: int | None = None,
) -> ValidationResult | TraceValidation:
    """Compare the SeqPoint projection and baselines with full runs of ``cfg``'s schedule; the
    SeqPoints are measured on ``executor`` (default ``[profile] executor``; the full runs go
    between the local protocol's worker processes, else after the campaign).

    With ``traces`` (recorded runs, ``seqpoint validate --trace``) they are the truth instead:
    the projection from SeqPoints of the first trace's micro-batches, and the first-N estimate
    of its ``first_n`` steps (default 10), against them (see :func:`validate_trace`)."""
    from seqpoint.reports import write_validation_report

    if traces is not None:
        if ks is not None or not exact:
            raise ConfigError("validate(traces=...) compares with recorded runs and computes neither error against "
                              "k nor exact FLOP totals: leave out ks and exact.")
        return validate_on_traces(cfg, traces, first_n=10 if first_n is None else first_n, reporter=reporter,
                                  executor=executor)
    if first_n is not None:
        raise ConfigError("validate(first_n=...) is the first-N estimate against recorded runs: give traces=..., or "
                          "leave out first_n (without traces the baselines are [validation] baselines).")
    reporter = reporter or Reporter(progress=False)
    folder = RunFolder.new(cfg.name + "-validate", cfg.report.out, command="validate")
    runs: list[FullRun] = []
    plan = interleave_plan(cfg.validation.runs, cfg.profile.processes) if cfg.validation.between_workers else {}
    c = Campaign(cfg, reporter=reporter, executor=executor, folder=folder, subset=True)
    # The drift check point (the first SeqPoint) is timed again at the end of every full run.
    check = c.seqpoints.points[0].signature

    def between(p: int, last: bool) -> None:
        """The full runs due after worker process ``p``, each in a fresh process."""
        for _ in range(0 if last else plan.get(p, 0)):
            runs.append(timed_full_runs(c, c.schedule, 1, reporter=reporter, check=check,
                                        label=f"full run {len(runs) + 1}/{cfg.validation.runs} "
                                              "(fresh process, between the workers)"))

    if plan:
        c.reporter = reporter.hooked(between)
    measurements = c.measure_seqpoints(every_signature=cfg.validation.steady_truth)
    c.reporter = reporter
    schedule, seqpoints = c.schedule, c.seqpoints
    projection = c.project()
    interleaved = len(runs)
    if interleaved < cfg.validation.runs:
        runs.append(timed_full_runs(c, schedule, cfg.validation.runs - interleaved, reporter=reporter, check=check))
    full = FullRun.stack(runs, interleaved=interleaved)
    folder.write_json("full_run.json", {**full.to_dict(), "per_iteration_s": full.iteration_s.tolist()})
    step = step_metric(cfg.profile.timer)  # time_s, or instructions: the full runs' unit
    steady = _steady_truth(c, measurements, projection, full.total_s, step)
    baselines = _baselines(c, measurements, full.total_s, steady, step)

    methods = ("seqpoint", *cfg.validation.baselines)
    ks = ks or tuple(range(1, 21))
    curves_time = error_vs_k(schedule, full.per_iteration_s, methods, ks, seed=cfg.selection.seed)

    exact_res: dict[str, ExactCheck] = {}
    curves_exact: dict[str, ErrorCurve] = {}
    if exact:
        costs = exact_costs(c.workload, schedule, reporter=reporter, state=c.profiler.state)
        for metric, per_it in costs.items():
            total = float(per_it.sum())
            proj = projection.totals.get(metric)
            if proj is None:  # metric not recorded by the harness: project the exact values
                proj = weighted_projection(per_it, [p.iteration for p in seqpoints.points],
                                           [p.weight for p in seqpoints.points])
            exact_res[metric] = ExactCheck(exact=total, projected=float(proj))
        curves_exact = error_vs_k(schedule, costs["flops"], methods, ks, seed=cfg.selection.seed)

    result = ValidationResult(
        config=cfg, folder=folder, schedule=schedule, seqpoints=seqpoints, measurements=measurements,
        projection=projection, full=full, baselines=baselines, exact=exact_res, steady=steady,
        curves_time=curves_time, curves_exact=curves_exact, unit=c.unit, reduction=c.reduction)
    folder.write_json("validation.json", result.to_dict())
    if cfg.report.plots or cfg.report.html:
        write_validation_report(
            result, folder.path, plots=cfg.report.plots, config_text=cfg.to_toml(),
            title=f"seqpoint validation: {cfg.name}",
            subtitle=f"{cfg.workload.name} · {len(schedule):,} iterations run in full x{full.n_runs}")
    return result


def interleave_plan(runs: int, processes: int) -> dict[int, int]:
    """Full runs to time after each worker process but the last (index → count): ``runs``
    spread evenly over the ``processes - 1`` gaps between workers; empty with one process.

    3 processes and 2 runs give ``{0: 1, 1: 1}`` (P F P F P); 5 and 2 give ``{1: 1, 3: 1}``.
    """
    gaps = processes - 1
    plan: dict[int, int] = {}
    if gaps < 1:
        return plan
    for i in range(runs):
        gap = (2 * i + 1) * gaps // (2 * runs)
        plan[gap] = plan.get(gap, 0) + 1
    return plan


def timed_full_runs(c: Campaign, schedule: IterationSchedule, runs: int, *, reporter: Reporter,
                    label: str | None = None, check: tuple[int, ...] | None = None) -> FullRun:
    """The schedule trained in full ``runs`` times, each in a fresh process (under callgrind,
    counted, with the ``instructions`` timer), in the process state ``c``'s SeqPoints ran in."""
    cfg = c.config
    if c.facts.on_cuda:
        c.profiler.check_shared_gpu(c.profiler.key().environment, "validate's full runs")
    how = ", counted under callgrind" if cfg.profile.timer == INSTRUCTIONS else ""
    title = label or f"full run x{runs} (fresh processes{how})"
    # on_progress(run, steps done) comes before (0) and after (every step) each run.
    with reporter.bar(title, runs * len(schedule), transient=True) as advance:
        return run_full_fresh(cfg.workload.name, dict(cfg.workload.set), schedule, runs=runs,
                              timer=cfg.profile.timer, check=check, process=c.profiler.process(),
                              on_progress=lambda _run, done: advance(done, None))


def _steady_truth(c: Campaign, measurements: Measurements, projection: Projection, truth: float,
                  step: str) -> SteadyTruth | None:
    """Every unique signature measured by the same harness, in the SeqPoints' worker
    processes; its gap to the full run is the in-sequence overhead (``step``: the unit)."""
    if c.others is None:
        return None
    by_sig = {m.signature: m for m in (*measurements.measurements, *c.others.measurements)}
    sig, counts, _ = c.schedule.unique_signatures()
    every = [by_sig.get(tuple(int(v) for v in row)) for row in sig]
    if not all(m is not None and m.ok for m in every):
        return None
    total = float(np.array([m.metrics[step] for m in every if m is not None]) @ counts)
    return SteadyTruth(total_s=total, selection_error=relative_error(projection.totals[step], total),
                       in_sequence_overhead=truth / total - 1.0, n_signatures=int(sig.shape[0]))


def _baselines(c: Campaign, measurements: Measurements, truth: float, steady: SteadyTruth | None,
               step: str) -> dict[str, Baseline]:
    """Each baseline's points at the SeqPoints' budget, profiled by the same harness: the
    signatures not measured yet (SeqPoints, the steady-state truth) all in one campaign, so
    a worker process starts once, not once per baseline."""
    from seqpoint.projection import project

    chosen = {m: choose_points(c.config.selection, c.schedule, method=m, n_points=len(c.seqpoints))[1]
              for m in c.config.validation.baselines}
    known = {m.signature: m for m in (*measurements.measurements, *(() if c.others is None else c.others.measurements))}
    needed = sorted({p.signature for pts in chosen.values() for p in pts.points} - known.keys())
    if needed:
        known.update((m.signature, m) for m in c.measure(needed).measurements)
    out: dict[str, Baseline] = {}
    for method, pts in chosen.items():
        ms = replace(measurements, measurements=tuple(replace(known[p.signature], iteration=p.iteration)
                                                        for p in pts.points))
        total = float("nan")
        if all(m.ok for m in ms.measurements):
            # Baselines project as they are used today: steady-state time of their points,
            # weighted. (Giving them the first-occurrence term would extrapolate one-time
            # costs from, e.g., the 10 shortest iterations to every shape of the run.)
            total = float(project(c.schedule, pts, ms, method="weighted", metrics=[step], context=c.model).totals[step])
        out[method] = Baseline(k=len(pts), projected_s=total, error=relative_error(total, truth),
                               selection_error=None if steady is None or total != total
                               else relative_error(total, steady.total_s))
    return out
