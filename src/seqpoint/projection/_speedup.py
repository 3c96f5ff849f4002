"""Speedup between two configurations measured on the same SeqPoints."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from seqpoint._params import Options, check_params
from seqpoint.exceptions import InputError
from seqpoint.measurements import STEADY_TIME, Measurement, Measurements
from seqpoint.measurements.metrics import BREAKDOWN_PREFIX, derived_of, steady_metric
from seqpoint.projection._intervals import confidence_quantile, process_noise
from seqpoint.projection._model import ScheduleModel, check_method, model_for
from seqpoint.projection._project import Projection, nonnegative_interval, project
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints

__all__ = ["Speedup", "project_speedup"]


@dataclass(frozen=True, kw_only=True)
class Speedup:
    """Projected whole-run speedup ``T_a / T_b`` of configuration b over a."""

    metric: str
    """Metric compared: ``run_time_s`` (the whole run), ``time_s`` (the steady state) or another
    (``run_instructions``, ``instructions`` with the ``instructions`` timer)."""
    value: float
    """``T_a / T_b``: above 1 when b is faster."""
    interval: tuple[float, float]
    """``(low, high)`` at ``confidence``: ``value ± (representation + noise + in_run_gap)``,
    the low end cut at 0."""
    per_category: dict[str, float] = field(default_factory=dict)
    """Operation category (``breakdown_s.<cat>`` in both sets) to its speedup."""
    total_a: float = 0.0
    """Projected total of configuration a."""
    total_b: float = 0.0
    """Projected total of configuration b."""
    method: str = "weighted"
    """Projection method used for both totals."""
    complete: bool = True
    """False when a point failed in either set."""
    confidence: float = 0.95
    """Confidence level of the noise part of the interval."""
    steady_value: float | None = None
    """With ``metric`` ``run_time_s``: the speedup of the steady state alone."""
    representation: float = 0.0
    """Half-width from the representation: the weighted and interpolated speedups' disagreement."""
    noise: float = 0.0
    """Half-width from timing noise."""
    in_run_gap: float = 0.0
    """With ``run_time_s`` and a window in either set: how far the speedup moves when each
    run time is scaled by its window's in-run ratio (:attr:`Projection.in_run_gap`)."""
    pairs: int = 0
    """Worker-process pairs whose ratios gave ``noise``; 0 for ``independent`` noise."""

    def relative_halfwidth(self) -> float:
        """Half-width relative to the speedup (the upper side: the lower one is cut at 0)."""
        return (self.interval[1] - self.value) / abs(self.value) if self.value else 0.0

    def to_dict(self) -> dict[str, object]:
        return {"metric": self.metric, "speedup": self.value, "interval": list(self.interval),
                "per_category": dict(self.per_category), "total_a": self.total_a, "total_b": self.total_b,
                "method": self.method, "complete": self.complete, "confidence": self.confidence,
                "steady_speedup": self.steady_value, "representation": self.representation, "noise": self.noise,
                **({"pairs": self.pairs} if self.pairs else {}),
                **({"in_run_gap": self.in_run_gap} if self.in_run_gap else {})}


def project_speedup(schedule: IterationSchedule, seqpoints: SeqPoints, meas_a: Measurements | Iterable[Measurement],
                    meas_b: Measurements | Iterable[Measurement], *, metric: str = "auto", method: str = "weighted",
                    confidence: float = 0.95, context: ScheduleModel | None = None, noise: str = "independent",
                    ) -> Speedup:
    """Project the speedup ``T_a / T_b`` of a whole run from two measurement sets, the baseline
    (``meas_a``) and the new configuration (``meas_b``), measured on ``seqpoints`` of ``schedule``.

    Both sets are projected on the same SeqPoints (``method``, ``confidence`` in (0, 1), and
    ``context``, the schedule's model shared by the four projections); representation errors
    largely cancel in the ratio, so the representation part of the interval is the disagreement
    of the weighted and interpolated speedups. ``metric="auto"`` compares ``run_time_s`` (with
    each configuration's cold-step term) when both sets measured their first steps, else
    ``time_s``; per-category speedups cover the ``breakdown_s`` categories of both sets.
    ``noise="independent"`` combines the two totals' relative noise in quadrature; ``"pairs"``
    pairs a's worker ``p`` with b's (both spread over the same ``P >= 2`` worker processes), the
    half-width ``t(P − 1) · std(r_p) / √P`` with ``r_p`` the ratio of their run totals
    (:attr:`Projection.process_totals`), the cold terms' noise in quadrature: narrower, but it
    held the measured speedup less often (``docs/projection.md``), so it is not the default.
    """
    check_method(method, "project_speedup")
    check_params("project_speedup", {"noise": [Options(("independent", "pairs"))]}, {"noise": noise})
    confidence_quantile(confidence, "project_speedup")  # checks it, naming this function
    model = model_for(schedule, context)
    other = "interpolated" if method == "weighted" else "weighted"
    pa = project(schedule, seqpoints, meas_a, method=method, confidence=confidence, context=model)
    pb = project(schedule, seqpoints, meas_b, method=method, confidence=confidence, context=model)
    step = _step(pa)
    run = derived_of(step)[1]
    if metric == "auto":
        metric = run if run in pa.totals and run in pb.totals else step
    for label, p in (("a", pa), ("b", pb)):
        if metric not in p.totals:
            raise InputError(f"Measurement set {label} has no metric {metric!r}. "
                             f"Available: {', '.join(sorted(p.totals))}.")
    if pb.totals[metric] == 0:
        raise InputError(f"The projected {metric!r} of set b is 0; a speedup needs a non-zero total.")
    qa = project(schedule, seqpoints, meas_a, method=other, metrics=[metric], context=model)
    qb = project(schedule, seqpoints, meas_b, method=other, metrics=[metric], context=model)
    s = pa.totals[metric] / pb.totals[metric]
    s_other = qa.totals[metric] / qb.totals[metric] if qb.totals[metric] else s
    # P when both sets have P >= 2 worker processes' totals of the metric, else 0.
    ta, tb = pa.process_totals.get(metric, ()), pb.process_totals.get(metric, ())
    pairs = len(ta) if noise == "pairs" and len(ta) == len(tb) >= 2 and 0 not in (*ta, *tb) else 0
    if noise == "pairs" and not pairs:
        if metric not in (step, run):
            why = f"per-process values of {metric!r}, which only the time has"
        elif pa.processes != pb.processes or pa.processes < 2:
            why = (f"the same number (2 or more) of worker processes; these have {pa.processes or 1} and "
                   f"{pb.processes or 1}")
        else:
            why = "a non-zero run total from every worker process"
        raise InputError(f"noise='pairs' needs both measurement sets to have {why}. Use noise='independent'.")
    rel = (_paired_noise(pa, pb, metric, confidence) if pairs
           else float(np.hypot(_relative(pa, pa.noise, metric), _relative(pb, pb.noise, metric))))
    rep, half_noise = abs(s - s_other), abs(s) * rel
    gap = _in_run_gap(pa, pb, s) if metric == run else 0.0
    cats = {k: pa.totals[k] / pb.totals[k] for k in pa.totals
            if k.startswith(BREAKDOWN_PREFIX) and k in pb.totals and pb.totals[k] != 0}
    return Speedup(
        metric=metric, value=s, per_category=cats, total_a=pa.totals[metric], total_b=pb.totals[metric],
        interval=nonnegative_interval(s - rep - half_noise - gap, s + rep + half_noise + gap),
        method=method, complete=pa.complete and pb.complete, confidence=confidence,
        steady_value=(pa.totals[step] / pb.totals[step] if metric == run and pb.totals.get(step) else None),
        representation=rep, noise=half_noise, in_run_gap=gap, pairs=pairs)


def _step(p: Projection) -> str:
    """The projection's step metric: ``time_s``, or ``instructions`` with that timer."""
    return steady_metric(p.totals) or STEADY_TIME


def _in_run_gap(pa: Projection, pb: Projection, s: float) -> float:
    """``|s' − s|``, ``s'`` the speedup with each run time times its window's in-run ratio."""
    if not (pa.in_run_gap or pb.in_run_gap):
        return 0.0

    def corrected(p: Projection) -> float:
        r = p.in_run_ratio if p.in_run_gap and p.in_run_ratio is not None else 1.0
        step = _step(p)
        return (p.totals[step] + p.totals.get(derived_of(step)[0], 0.0)) * r

    tb = corrected(pb)
    return abs(corrected(pa) / tb - s) if tb else 0.0


def _relative(p: Projection, half: dict[str, float], metric: str, part: str | None = None) -> float:
    """``half[part or metric]`` relative to the projection's ``metric`` total."""
    total = p.totals[metric]
    return half.get(part or metric, 0.0) / abs(total) if total else 0.0


def _paired_noise(pa: Projection, pb: Projection, metric: str, confidence: float) -> float:
    """Relative noise of ``T_a / T_b`` from the worker pairs' ratios; the cold-step terms are
    the same constant in every worker's total, so their noise is added in quadrature."""
    r = np.asarray(pa.process_totals[metric]) / np.asarray(pb.process_totals[metric])
    pairs = process_noise(r, confidence) / abs(float(r.mean()))
    cold_name, run = derived_of(_step(pa))
    if metric != run:
        return pairs
    cold = np.hypot(_relative(pa, pa.noise, metric, cold_name), _relative(pb, pb.noise, metric, cold_name))
    return float(np.hypot(pairs, cold))
