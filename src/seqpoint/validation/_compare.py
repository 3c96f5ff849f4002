"""Projection error of SeqPoints and baselines against a known per-iteration cost, and
a projected total against measured runs (:class:`TruthComparison`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from seqpoint.measurements._metrics import time_metric
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import make_selector, weighted_projection

__all__ = ["ErrorCurve", "TruthComparison", "error_vs_k", "noise_floor", "reduction_factor"]


def noise_floor(values: ArrayLike) -> float:
    """Largest relative difference between identical measurements: ``(max − min) / mean``
    of two or more run totals (or ratios); NaN with fewer, where there is no floor to
    measure. No error below it is meaningful."""
    v = np.asarray(values, dtype=np.float64).ravel()
    return float((v.max() - v.min()) / v.mean()) if v.size >= 2 else float("nan")


@dataclass(frozen=True, kw_only=True)
class TruthComparison:
    """A projected total against measured runs of the same work: full runs (``validate``),
    recorded runs (``validate --trace``) or data-parallel runs."""

    runs_s: tuple[float, ...]
    """Each measured run's total, seconds."""
    projected_s: float
    """The projected total, seconds."""
    interval_s: tuple[float, float] = (float("nan"), float("nan"))
    """The projection's interval, seconds (NaN where it has none)."""

    @classmethod
    def of(cls, totals: Mapping[str, float], interval: Mapping[str, tuple[float, float]],
           runs_s: tuple[float, ...]) -> TruthComparison:
        """A projection's time (its :func:`~seqpoint.measurements.time_metric`) against ``runs_s``."""
        metric = time_metric(totals)
        lo, hi = interval[metric]
        return cls(runs_s=runs_s, projected_s=float(totals[metric]), interval_s=(float(lo), float(hi)))

    @property
    def measured_s(self) -> float:
        """Mean of the measured runs, seconds: the truth."""
        return float(np.mean(self.runs_s))

    @property
    def noise_floor(self) -> float:
        """:func:`noise_floor` of the runs (NaN with one)."""
        return noise_floor(self.runs_s)

    @property
    def error(self) -> float:
        """Signed relative error ``(projected − measured) / measured``."""
        return (self.projected_s - self.measured_s) / self.measured_s

    @property
    def within(self) -> bool:
        """Whether the interval holds the measured mean."""
        lo, hi = self.interval_s
        return bool(lo <= self.measured_s <= hi)

    def to_dict(self) -> dict[str, Any]:
        return {"measured_s": self.measured_s, "measured_runs_s": list(self.runs_s),
                "noise_floor": self.noise_floor, "projected_s": self.projected_s,
                "interval_s": list(self.interval_s), "error": self.error, "within_interval": self.within}


@dataclass(frozen=True, kw_only=True)
class ErrorCurve:
    """Relative projection error of one method for each budget k."""

    method: str
    """Selector name."""
    ks: tuple[int, ...]
    """Profiled iterations."""
    errors: tuple[float, ...]
    """Signed relative error ``(projected - true) / true`` for each k."""

    def at(self, k: int) -> float:
        return self.errors[self.ks.index(k)]

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "ks": list(self.ks), "errors": list(self.errors)}


def error_vs_k(
    schedule: IterationSchedule,
    cost: ArrayLike,
    methods: Iterable[str],
    ks: Sequence[int],
    *,
    seed: int = 0,
    params: dict[str, dict[str, Any]] | None = None,
) -> dict[str, ErrorCurve]:
    """Fit every selector at every k and project ``cost`` with its points and weights.

    Parameters
    ----------
    schedule : IterationSchedule
        The run.
    cost : array-like of shape (n_iterations,)
        Known cost of every iteration (exact FLOPs, or measured seconds of a full run).
    methods : iterable of str
        Selector names from ``seqpoint.selection.SELECTORS``.
    ks : sequence of int
        Budgets; a k above the number of iterations is skipped.
    """
    c = np.asarray(cost, dtype=np.float64)
    if c.shape != (len(schedule),):
        raise ValueError(f"cost must have shape ({len(schedule)},); got {c.shape}")
    truth = float(c.sum())
    out: dict[str, ErrorCurve] = {}
    for method in methods:
        used, errs = [], []
        for k in ks:
            if k > len(schedule):
                continue
            sel = make_selector(method, n_points=k, random_state=seed, **(params or {}).get(method, {}))
            sel.fit(schedule)
            est = weighted_projection(c, sel.points_, sel.weights_)
            used.append(int(k))
            errs.append((est - truth) / truth)
        out[method] = ErrorCurve(method=method, ks=tuple(used), errors=tuple(errs))
    return out


def reduction_factor(
    n_iterations: int, n_points: int, *, warmup: int, repeats: int, profiled: int = 0,
    overhead: int = 0,
) -> float:
    """Iterations of the full run over training steps executed to profile the points.

    Every step a point costs is counted (warm-up, timed repeats and the ``profiled``
    steps run under torch.profiler for the breakdown), and ``overhead``, the steps of
    the campaign that belong to no point (``ProfileConfig.protocol_steps()``: the
    start-up and drift checks of every worker process), so this is the honest saving in
    executed steps.
    """
    executed = n_points * (warmup + repeats + profiled) + overhead
    return n_iterations / executed if executed else float("inf")
