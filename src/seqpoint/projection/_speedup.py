"""Speedup between two configurations measured on the same SeqPoints."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from seqpoint.exceptions import InputError
from seqpoint.measurements import BREAKDOWN_PREFIX, RUN_TIME, STEADY_TIME, Measurement, Measurements
from seqpoint.projection._intervals import confidence_quantile
from seqpoint.projection._model import ScheduleModel, check_method, model_for
from seqpoint.projection._project import project
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints

__all__ = ["Speedup", "project_speedup"]


@dataclass(frozen=True, kw_only=True)
class Speedup:
    """Projected whole-run speedup ``T_a / T_b`` of configuration b over a."""

    metric: str
    """Metric compared: ``run_time_s`` (the whole run, cold steps included), ``time_s``
    (the steady state alone) or another projected metric."""
    value: float
    """``T_a / T_b``: above 1 when b is faster."""
    interval: tuple[float, float]
    """``(low, high)`` at ``confidence``."""
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
    """With ``metric`` ``run_time_s``: the speedup of the steady state alone, so the share
    of the ratio that comes from the cold-step terms shows."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "speedup": self.value,
            "interval": list(self.interval),
            "per_category": dict(self.per_category),
            "total_a": self.total_a,
            "total_b": self.total_b,
            "method": self.method,
            "complete": self.complete,
            "confidence": self.confidence,
            "steady_speedup": self.steady_value,
        }


def project_speedup(
    schedule: IterationSchedule,
    seqpoints: SeqPoints,
    meas_a: Measurements | Iterable[Measurement],
    meas_b: Measurements | Iterable[Measurement],
    *,
    metric: str = "auto",
    method: str = "weighted",
    confidence: float = 0.95,
    context: ScheduleModel | None = None,
) -> Speedup:
    """Project the speedup ``T_a / T_b`` of a whole run from two measurement sets.

    Both sets are projected on the same SeqPoints. Representation errors largely
    cancel in the ratio, so the representation part of the interval is the disagreement
    of the weighted and interpolated speedups; the noise part combines the two totals'
    relative noise half-widths ``n/T`` in quadrature, ``S·sqrt((n_a/T_a)² + (n_b/T_b)²)``
    (each at least its worker processes' spread, see :func:`project`).

    Parameters
    ----------
    schedule : IterationSchedule
        The run.
    seqpoints : SeqPoints
        The points both sets measured.
    meas_a, meas_b : Measurements or iterable of Measurement
        Baseline (a) and new (b) configuration.
    metric : str
        Metric to compare; ``auto`` (the default) compares ``run_time_s``, the whole run
        with each configuration's cold-step term, when both sets measured their points'
        first steps, and ``time_s``, the steady state, otherwise. A configuration's first
        steps of each shape can cost relatively more than another's (bf16 on a CPU builds
        new oneDNN primitives for every shape), so the steady-state ratio alone can miss
        the run's speedup by far more than the whole-run ratio does. Per-category speedups
        cover the ``breakdown_s`` categories present in both sets.
    method : {"weighted", "interpolated"}
        Projection method.
    confidence : float
        Confidence level in (0, 1).
    context : ScheduleModel, optional
        The schedule's model; built once here when omitted and shared by the four
        projections (both sets, both methods).
    """
    check_method(method, "project_speedup")
    confidence_quantile(confidence, "project_speedup")  # checks it, naming this function
    model = model_for(schedule, context)
    other = "interpolated" if method == "weighted" else "weighted"
    pa = project(schedule, seqpoints, meas_a, method=method, confidence=confidence, context=model)
    pb = project(schedule, seqpoints, meas_b, method=method, confidence=confidence, context=model)
    if metric == "auto":
        metric = RUN_TIME if RUN_TIME in pa.totals and RUN_TIME in pb.totals else STEADY_TIME
    for label, p in (("a", pa), ("b", pb)):
        if metric not in p.totals:
            raise InputError(
                f"Measurement set {label} has no metric {metric!r}. Available: {', '.join(sorted(p.totals))}."
            )
    if pb.totals[metric] == 0:
        raise InputError(f"The projected {metric!r} of set b is 0; a speedup needs a non-zero total.")
    qa = project(schedule, seqpoints, meas_a, method=other, metrics=[metric], context=model)
    qb = project(schedule, seqpoints, meas_b, method=other, metrics=[metric], context=model)
    s = pa.totals[metric] / pb.totals[metric]
    s_other = qa.totals[metric] / qb.totals[metric] if qb.totals[metric] else s
    rel_a = pa.noise[metric] / abs(pa.totals[metric]) if pa.totals[metric] else 0.0
    rel_b = pb.noise[metric] / abs(pb.totals[metric])
    half = abs(s - s_other) + abs(s) * float(np.hypot(rel_a, rel_b))
    cats = {
        k: pa.totals[k] / pb.totals[k]
        for k in pa.totals
        if k.startswith(BREAKDOWN_PREFIX) and k in pb.totals and pb.totals[k] != 0
    }
    return Speedup(
        metric=metric,
        value=s,
        interval=(s - half, s + half),
        per_category=cats,
        total_a=pa.totals[metric],
        total_b=pb.totals[metric],
        method=method,
        complete=pa.complete and pb.complete,
        confidence=confidence,
        steady_value=(pa.totals[STEADY_TIME] / pb.totals[STEADY_TIME]
                      if metric == RUN_TIME and pb.totals.get(STEADY_TIME) else None),
    )
