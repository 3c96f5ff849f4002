"""Project whole-run totals of any metric from per-SeqPoint measurements, with an interval. ``weighted`` is the
SeqPoint paper's ``Σ_i weight_i · value_i``; ``interpolated`` sums the cost model of :class:`ScheduleModel` over
every iteration (exact for a cost linear in tokens, and when every signature is measured); peak metrics take the
fitted maximum. The interval is in :mod:`._intervals` (a device model's ``model_<gpu>_s`` adds the model's own
error); ``first_occurrence_s`` and ``run_time_s`` (steady state plus cold steps, :mod:`._cold`) derive from
``time_s``, as ``*_instructions`` from ``instructions``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint._params import Options, check_params
from seqpoint.devices import model_band
from seqpoint.exceptions import InputError
from seqpoint.measurements import (
    STEADY_TIME,
    Measurement,
    Measurements,
    per_process_key,
    standard_error,
)
from seqpoint.measurements.metrics import (
    COMPILE_TIME,
    DERIVED,
    INSTRUCTIONS,
    breakdown_key,
    derived_of,
    is_peak,
    is_projectable,
    projectable_values,
    steady_metric,
)
from seqpoint.projection._cold import COLD_METHODS, ColdTerm, first_occurrence, window_ratio
from seqpoint.projection._intervals import IntervalEstimator, confidence_quantile
from seqpoint.projection._match import match_measurements, seqpoint_rows
from seqpoint.projection._model import PointProjector, ScheduleModel, check_method, model_for
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints

__all__ = ["Projection", "project"]


@dataclass(frozen=True, kw_only=True)
class Projection:
    """Projected whole-run totals with their intervals."""

    n_iterations: int
    method: str
    """``weighted`` or ``interpolated``."""
    totals: dict[str, float]
    """Metric to projected run total (``breakdown_s.<category>`` for each op category)."""
    interval: dict[str, tuple[float, float]]
    """Metric to ``(low, high)`` at ``confidence``: ``total ± half-width``, the low end cut at 0."""
    complete: bool = True
    """False when some SeqPoints failed (OOM/error) and were projected from the rest."""
    failed: tuple[int, ...] = ()
    """Iterations of the SeqPoints that failed."""
    n_points: int = 0
    """SeqPoints used (ok ones)."""
    confidence: float = 0.95
    """Confidence level of the noise part of the interval."""
    representation: dict[str, float] = field(default_factory=dict)
    """Metric to the representation half-width of the interval."""
    noise: dict[str, float] = field(default_factory=dict)
    """Metric to the measurement-noise half-width of the interval."""
    cold_steps: dict[str, int] = field(default_factory=dict)
    """Steps charged a cold first step: ``first`` (one per tensor shape) and ``evicted``
    (met again after oneDNN's primitive cache dropped them); empty without a cold term."""
    cold_term: dict[str, Any] = field(default_factory=dict)
    """The cold-step term of ``run_time_s`` (:meth:`ColdTerm.to_dict`); empty without one."""
    compile_term: dict[str, float] = field(default_factory=dict)
    """torch.compile's one-off term of ``run_time_s`` (``compile_s``): ``total_s``,
    ``halfwidth_s``, ``graphs``, ``processes`` (``Measurements.compile``); empty for an eager run."""
    processes: int = 0
    """Worker processes whose own run totals bound the noise of ``time_s`` from below
    (Student's t, ``processes − 1`` degrees of freedom); 0 when fewer than two."""
    in_run_gap: float = 0.0
    """Seconds added to each side of ``run_time_s``'s interval: ``|r − 1|`` × the steady state
    and cold steps, ``r`` the window's in-run ratio; 0 without a window or with
    ``in_run_correction``. With ``representation``, ``noise`` and ``compile_term``'s it adds
    up to the half-width."""
    in_run_ratio: float | None = None
    """The window's in-run ratio ``r``: its steps' measured time over what the projection
    charges for them (steady and cold steps); None without a window or a
    cold-step term."""
    process_totals: dict[str, tuple[float, ...]] = field(default_factory=dict)
    """Metric (``time_s``, ``run_time_s``) to the total projected from each worker process's
    own values, worker ``p`` at ``[p]``; empty with fewer than two workers."""

    def relative_halfwidth(self, metric: str) -> float:
        """Half-width relative to the total (the upper side: the lower one is cut at 0)."""
        lo, hi = self.interval[metric]
        t = self.totals[metric]
        return max(hi - t, t - lo) / abs(t) if t else 0.0

    def to_dict(self) -> dict[str, object]:
        """The ``seqpoint project --json`` shape (plus extra keys)."""
        optional = {"cold_steps": dict(self.cold_steps), "cold_term": dict(self.cold_term),
                    "compile_term": dict(self.compile_term),
                    "processes": self.processes, "in_run_gap": self.in_run_gap, "in_run_ratio": self.in_run_ratio,
                    "process_totals": {k: list(v) for k, v in self.process_totals.items()}}
        return {
            "n_iterations": self.n_iterations, "projected": dict(self.totals),
            "interval": {k: [lo, hi] for k, (lo, hi) in self.interval.items()}, "method": self.method,
            "complete": self.complete, "failed": list(self.failed), "n_points": self.n_points,
            "confidence": self.confidence, "representation": dict(self.representation), "noise": dict(self.noise),
            # written only when there is one (in_run_ratio: when not None, even 0)
            **{k: v for k, v in optional.items() if (v is not None if k == "in_run_ratio" else v)},
        }


@dataclass
class _Totals:
    """The result dictionaries :class:`Projection` is built from, filled metric by metric."""

    totals: dict[str, float] = field(default_factory=dict)
    interval: dict[str, tuple[float, float]] = field(default_factory=dict)
    representation: dict[str, float] = field(default_factory=dict)
    noise: dict[str, float] = field(default_factory=dict)
    process_totals: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def add(self, name: str, total: float, rep: float, noise: float, gap: float = 0.0) -> None:
        self.totals[name] = total
        self.interval[name] = nonnegative_interval(total - rep - noise - gap, total + rep + noise + gap)
        self.representation[name] = rep
        self.noise[name] = noise

    def add_cold(self, cold: ColdTerm, in_run: float = 1.0, gap: float = 0.0, step: str = STEADY_TIME) -> None:
        """Add ``first_occurrence_s`` and ``run_time_s`` (``time_s`` × ``in_run`` + cold steps, ± ``gap``),
        or the totals derived from another ``step`` metric (:func:`derived_of`)."""
        fo, hw = cold.total, cold.halfwidth
        cold_name, run_name = derived_of(step)
        self.add(cold_name, fo, 0.0, hw)
        self.add(run_name, self.totals[step] * in_run + fo, self.representation[step] * in_run,
                 self.noise[step] * in_run + hw, gap)
        if step in self.process_totals:
            self.process_totals[run_name] = tuple(t * in_run + fo for t in self.process_totals[step])

    def add_compile(self, compiled: dict[str, float]) -> dict[str, float]:
        """Add ``compile_s`` (torch.compile's one-off seconds in a process that measured) to
        ``run_time_s``, ± the processes' spread and one graph's compile (a run may compile one
        graph more or fewer than they did); returns the term."""
        s, graphs = compiled["seconds"], compiled.get("graphs", 1.0)
        hw = compiled.get("spread_s", 0.0) + s / max(graphs, 1.0)
        self.add(COMPILE_TIME, s, 0.0, hw)
        run = derived_of(STEADY_TIME)[1]
        lo, hi = self.interval[run]
        self.totals[run] += s  # its half-width widens the interval alone, as in_run_gap does
        self.interval[run] = nonnegative_interval(lo + s - hw, hi + s + hw)
        if run in self.process_totals:
            self.process_totals[run] = tuple(t + s for t in self.process_totals[run])
        return {"total_s": s, "halfwidth_s": hw, "graphs": graphs, "processes": compiled.get("processes", 1.0)}


def nonnegative_interval(lo: float, hi: float) -> tuple[float, float]:
    """``(lo, hi)`` with ``lo`` cut at 0: no run total is below zero."""
    return max(lo, 0.0), max(hi, 0.0)


def project(schedule: IterationSchedule, seqpoints: SeqPoints, measurements: Measurements | Iterable[Measurement], *,
            method: str = "weighted", metrics: Iterable[str] | None = None, confidence: float = 0.95,
            context: ScheduleModel | None = None, cold: str = "auto", in_run_correction: bool = False) -> Projection:
    """Project run totals of measured metrics from the SeqPoints' measurements.

    ``seqpoints`` must be chosen from ``schedule`` (their iterations and signatures are checked);
    ``measurements`` holds one per SeqPoint, matched by signature; points not ``ok`` are projected
    from the others (``complete=False``), and a compiled workload's ``Measurements.compile`` adds
    its one-off compilations, ``compile_s``, to ``run_time_s``. ``method`` is ``weighted`` or
    ``interpolated`` (the module docstring); ``metrics`` defaults to every metric present at all
    ok points, plus every ``breakdown_s.<category>`` (0 s where a point lacks it); ``confidence``
    is in (0, 1); ``context`` is the schedule's model, shared by several projections of it.
    ``cold`` calibrates the cold-step term: ``first_step`` (each point's cold first step),
    ``window`` (the timed in-sequence window ``measurements.window``) or ``auto`` (the first
    steps, else the window). With a window, ``in_run_correction`` scales the steady state in
    ``run_time_s`` by the window's in-run ratio ``r``; without it ``r`` widens ``run_time_s``'s
    interval by ``|r − 1|`` × its total (:attr:`Projection.in_run_gap`).
    """
    check_method(method, "project")
    check_params("project", {"cold": [Options(COLD_METHODS)]}, {"cold": cold})
    z = confidence_quantile(confidence, "project")
    window = getattr(measurements, "window", None)
    rows = seqpoint_rows(schedule, seqpoints)
    matched = match_measurements(seqpoints, measurements)
    ok = np.array([m.ok for m in matched], dtype=bool)
    if not ok.any():
        reasons = "; ".join(f"iteration {p.iteration}: {m.status} {m.message}".strip()
                            for p, m in zip(seqpoints.points, matched, strict=True))
        raise InputError(f"Every SeqPoint failed to measure ({reasons}); nothing to project from.")
    ok_meas = [m for m, good in zip(matched, ok, strict=True) if good]
    requested, want_cold = _expand_derived(metrics)
    names = _select_metrics(ok_meas, requested)
    model = model_for(schedule, context)
    weights = np.array([p.weight for p in seqpoints.points], dtype=np.float64)
    proj = PointProjector(model, model.table.inverse[rows], weights, ok)
    estimator = IntervalEstimator(proj, seqpoints, method, confidence, z)

    out, processes = _Totals(), 0
    for name in names:
        vals = np.array([projectable_values(m).get(name, 0.0) for m in ok_meas], dtype=np.float64)
        se = np.array([standard_error(m, name) for m in ok_meas])
        peak = is_peak(name)
        total = proj.total(vals, method, peak=peak)
        per_process = per_process_values(ok_meas, name)
        if per_process is not None and not peak:
            out.process_totals[name] = tuple(float(t) for t in estimator.process_totals(per_process))
            if name == steady_metric(names):
                processes = per_process.shape[0]
        out.add(name, total, estimator.representation(vals, total, peak=peak),
                estimator.noise(vals, se, peak=peak, per_process=per_process), model_band(name) * abs(total))
    term = None
    step = steady_metric(out.totals)  # time_s, or instructions with that timer
    if step is not None and want_cold and not (cold == "window" and window is None):
        term = first_occurrence(proj, ok_meas, z, window=window if cold == "window" else None, step=step)
        if term is None and cold == "auto" and window is not None:  # the points have no cold first step
            term = first_occurrence(proj, ok_meas, z, window=window, step=step)
    gap, r = 0.0, None
    if term is not None and step is not None:
        # the window against the projection, whichever calibration the cold term used
        r = None if window is None else window_ratio(proj, ok_meas, window, term, step=step)
        if r is not None and not in_run_correction:
            gap = abs(r - 1.0) * (out.totals[step] + term.total)
        out.add_cold(term, r if in_run_correction and r is not None else 1.0, gap, step)
    compiled = getattr(measurements, "compile", None)
    compile_term = out.add_compile(compiled) if compiled and term is not None and step == STEADY_TIME else {}
    return Projection(
        n_iterations=len(schedule), method=method, totals=out.totals, interval=out.interval, complete=bool(ok.all()),
        n_points=int(ok.sum()), confidence=confidence,
        failed=tuple(p.iteration for p, good in zip(seqpoints.points, ok, strict=True) if not good),
        representation=out.representation, noise=out.noise, processes=processes, in_run_gap=gap, in_run_ratio=r,
        process_totals=out.process_totals, cold_steps=term.counts if term is not None else {},
        cold_term=term.to_dict(out.totals[derived_of(step)[1]]) if term is not None and step is not None else {},
        compile_term=compile_term)


def per_process_values(ok: Sequence[Measurement], name: str) -> NDArray[np.float64] | None:
    """``(P, points)``: what each of ``P >= 2`` worker processes measured at every point (cached
    points' workers, of the same ``P`` by the cache key, are independent draws too); None
    unless every point has the same ``P >= 2``."""
    rows = [m.samples.get(per_process_key(name)) for m in ok]
    sizes = {None if r is None else len(r) for r in rows}
    if len(sizes) != 1 or (size := sizes.pop()) is None or size < 2:
        return None
    return np.array(rows, dtype=np.float64).T


def _expand_derived(metrics: Iterable[str] | None) -> tuple[list[str] | None, bool]:
    """Measured metrics to project for ``metrics``, and whether to derive the cold-step totals
    (asking for ``run_time_s`` or ``first_occurrence_s`` projects ``time_s`` too;
    ``run_instructions``, ``instructions``)."""
    if metrics is None:
        return None, True
    requested = list(metrics)
    if not any(m in DERIVED for m in requested):
        return requested, False
    measured = [m for m in requested if m not in DERIVED]
    steps = [s for s in (STEADY_TIME, INSTRUCTIONS) if any(d in requested for d in derived_of(s))]
    return measured + [s for s in steps if s not in measured], True


def _select_metrics(ok: Sequence[Measurement], metrics: list[str] | None) -> list[str]:
    """The metrics to project: ``metrics`` checked against those every ok point has, or all."""
    common = set.intersection(*(set(m.metrics) for m in ok)) if ok else set()
    plain = {k for k in common if is_projectable(k)}
    cats = set().union(*(set(m.breakdown_s) for m in ok))
    available = sorted(plain) + sorted(breakdown_key(c) for c in cats)
    if metrics is None:
        if not available:
            raise InputError("The measurements have no metric common to every ok SeqPoint.")
        return available
    per_point = [projectable_values(m) for m in ok]
    for name in metrics:
        if name not in available:
            missing = [i for i, p in enumerate(per_point) if name not in p]
            where = f" (missing at ok point(s) {missing[:5]})" if missing and len(missing) < len(ok) else ""
            raise InputError(f"Metric {name!r} is not in every ok measurement{where}. "
                             f"Available: {', '.join(available) or 'none'}.")
    return metrics
