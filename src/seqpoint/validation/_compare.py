"""Projection error of SeqPoints and baselines against a known per-iteration cost.

``weighted_projection`` (the paper's ``Σ weight_i × cost[point_i]``) is defined once in
:mod:`seqpoint.selection` and re-exported here under its historical path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from seqpoint.schedule import IterationSchedule
from seqpoint.selection import make_selector, weighted_projection

__all__ = ["ErrorCurve", "error_vs_k", "noise_floor", "reduction_factor", "weighted_projection"]


def noise_floor(values: ArrayLike) -> float:
    """Largest relative difference between identical measurements: ``(max − min) / mean``
    of two or more run totals (or ratios); NaN with fewer, where there is no floor to
    measure. No error below it is meaningful."""
    v = np.asarray(values, dtype=np.float64).ravel()
    return float((v.max() - v.min()) / v.mean()) if v.size >= 2 else float("nan")


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
