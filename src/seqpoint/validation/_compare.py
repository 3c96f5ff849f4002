"""Projections against the truth: a total against measured runs, a measured speedup of two
configurations, and the error of SeqPoints and baselines against a known per-iteration cost."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from seqpoint.exceptions import InputError
from seqpoint.measurements.metrics import relative_error, time_metric
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import make_selector, weighted_projection

__all__ = ["Drift", "ErrorCurve", "MeasuredSpeedup", "TruthComparison", "error_vs_k", "noise_floor"]


def noise_floor(values: ArrayLike) -> float:
    """``(max − min) / mean`` of two or more identical measurements (NaN with fewer): no error
    below it is meaningful."""
    v = np.asarray(values, dtype=np.float64).ravel()
    return float((v.max() - v.min()) / v.mean()) if v.size >= 2 else float("nan")


def _relative_se(values: tuple[float, ...]) -> float:
    """Relative standard error of the median, ``1.2533 σ / √n / median``; 0 with one value."""
    v = np.asarray(values, dtype=np.float64)
    return float(1.2533 * v.std(ddof=1) / np.sqrt(v.size) / np.median(v)) if v.size >= 2 else 0.0


@dataclass(frozen=True, kw_only=True)
class Drift:
    """How much the machine's speed moved between profiling and the truth, read on one check
    point: its profiled repeats (``profiled``, in the projection's unit) beside its steps timed
    at the end of each full run (``later``). A machine slowing down reads here, not as error."""

    profiled: tuple[float, ...]
    later: tuple[float, ...]

    @property
    def change(self) -> float:
        return float(np.median(self.later) / np.median(self.profiled) - 1.0)

    @property
    def standard_error(self) -> float:
        """Relative standard error of :attr:`change`."""
        return float(np.hypot(_relative_se(self.profiled), _relative_se(self.later)))

    def widen(self, projected: float, interval: tuple[float, float], confidence: float) -> tuple[float, float]:
        """``interval`` grown to hold the projection at the later speed (× ``1 + change``),
        padded by the change's own error at ``confidence``."""
        lo, hi = interval
        scale = 1.0 + self.change
        pad = NormalDist().inv_cdf(0.5 + confidence / 2) * self.standard_error * abs(projected)
        return min(lo, lo * scale) - pad, max(hi, hi * scale) + pad

    def to_dict(self) -> dict[str, Any]:
        return {"change": self.change, "standard_error": self.standard_error,
                "profiled": list(self.profiled), "later": list(self.later)}


@dataclass(frozen=True, kw_only=True)
class TruthComparison:
    """A projected total against the totals of measured runs of the same work, seconds: full runs
    (``validate``), recorded runs (``validate --trace``) or data-parallel runs."""

    runs_s: tuple[float, ...]
    projected_s: float
    interval_s: tuple[float, float] = (float("nan"), float("nan"))
    """The interval the runs are held to (the projection's, grown by :attr:`drift`), seconds."""
    drift: Drift | None = None

    @classmethod
    def of(cls, totals: Mapping[str, float], interval: Mapping[str, tuple[float, float]],
           runs_s: tuple[float, ...], *, drift: Drift | None = None, confidence: float = 0.95) -> TruthComparison:
        """A projection's :func:`~seqpoint.measurements.time_metric` against ``runs_s``, its
        interval grown by ``drift`` (:meth:`Drift.widen`)."""
        metric = time_metric(totals)
        lo, hi = float(interval[metric][0]), float(interval[metric][1])
        projected = float(totals[metric])
        if drift is not None:
            lo, hi = drift.widen(projected, (lo, hi), confidence)
        return cls(runs_s=runs_s, projected_s=projected, interval_s=(lo, hi), drift=drift)

    @property
    def measured_s(self) -> float:
        """Mean of the measured runs, seconds: the truth."""
        return float(np.mean(self.runs_s))

    @property
    def noise_floor(self) -> float:
        return noise_floor(self.runs_s)

    @property
    def error(self) -> float:
        return relative_error(self.projected_s, self.measured_s)

    @property
    def within(self) -> bool:
        lo, hi = self.interval_s
        return bool(lo <= self.measured_s <= hi)

    def to_dict(self) -> dict[str, Any]:
        return {"measured_s": self.measured_s, "measured_runs_s": list(self.runs_s),
                "noise_floor": self.noise_floor, "projected_s": self.projected_s,
                "interval_s": list(self.interval_s), "error": self.error, "within_interval": self.within,
                "drift": None if self.drift is None else self.drift.to_dict()}


@dataclass(frozen=True)
class MeasuredSpeedup:
    """``T_a / T_b`` of full runs timed in rounds (a then b, b then a, ...): round ``i`` times
    ``runs_a_s[i]`` and ``runs_b_s[i]`` (seconds) next to each other, so a change of the
    machine's speed moves both, and the alternating order cancels a steady drift."""

    runs_a_s: tuple[float, ...]
    runs_b_s: tuple[float, ...]

    def __post_init__(self) -> None:
        a, b = np.asarray(self.runs_a_s, dtype=np.float64), np.asarray(self.runs_b_s, dtype=np.float64)
        if a.shape != b.shape or a.size == 0:
            raise InputError(f"A measured speedup needs one run of each configuration per round; "
                             f"got {a.size} of a and {b.size} of b.")
        if not (np.isfinite(a).all() and np.isfinite(b).all() and (a > 0).all() and (b > 0).all()):
            raise InputError("A measured speedup needs positive, finite run times.")
        object.__setattr__(self, "runs_a_s", tuple(float(x) for x in a))
        object.__setattr__(self, "runs_b_s", tuple(float(x) for x in b))

    @classmethod
    def from_rounds(cls, rounds: Sequence[tuple[float, float]]) -> MeasuredSpeedup:
        return cls(tuple(a for a, _ in rounds), tuple(b for _, b in rounds))

    @property
    def n_rounds(self) -> int:
        return len(self.runs_a_s)

    @property
    def value(self) -> float:
        return float(np.mean(self.runs_a_s) / np.mean(self.runs_b_s))

    @property
    def noise_floor(self) -> float:
        """:func:`noise_floor` of ``a/b`` over every pairing of a's and b's runs (0 with one round)."""
        ratios = [x / y for x in self.runs_a_s for y in self.runs_b_s]
        return noise_floor(ratios) if len(ratios) >= 2 else 0.0

    @property
    def per_round(self) -> NDArray[np.float64]:
        return np.asarray(self.runs_a_s) / np.asarray(self.runs_b_s)

    @property
    def standard_error(self) -> float | None:
        """Relative standard error of the ratio, from :attr:`per_round` (None with one round)."""
        if self.n_rounds < 2:
            return None
        r = self.per_round
        return float(r.std(ddof=1) / np.sqrt(r.size) / self.value)

    def held_by(self, interval: tuple[float, float]) -> bool:
        lo, hi = interval
        return bool(lo <= self.value <= hi)

    def agrees_with(self, projected: float, interval: tuple[float, float], confidence: float = 0.95) -> bool | None:
        """Whether a projection and this speedup agree once the measured ratio's own error counts,
        ``|projected − value| ≤ √(h² + (z·se·value)²)`` (``h`` the interval's wider half-width about
        ``projected``): a miss of :meth:`held_by` this forgives is the truth's noise; None with one round."""
        se = self.standard_error
        if se is None:
            return None
        lo, hi = interval
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        return bool(abs(projected - self.value) <= float(np.hypot(max(hi - projected, projected - lo), z * se * self.value)))

    def error_of(self, projected: float) -> float:
        return relative_error(projected, self.value)

    def to_dict(self) -> dict[str, Any]:
        return {"speedup": self.value, "runs_a_s": list(self.runs_a_s), "runs_b_s": list(self.runs_b_s),
                "noise_floor": self.noise_floor, "standard_error": self.standard_error}


@dataclass(frozen=True, kw_only=True)
class ErrorCurve:
    """Signed relative projection error ``(projected - true) / true`` of one selector for each
    budget k (profiled iterations)."""

    method: str
    ks: tuple[int, ...]
    errors: tuple[float, ...]

    def at(self, k: int) -> float:
        return self.errors[self.ks.index(k)]

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "ks": list(self.ks), "errors": list(self.errors)}


def error_vs_k(schedule: IterationSchedule, cost: ArrayLike, methods: Iterable[str], ks: Sequence[int], *,
               seed: int = 0, params: dict[str, dict[str, Any]] | None = None) -> dict[str, ErrorCurve]:
    """Fit every selector (``methods``: names in ``seqpoint.selection.SELECTORS``) at every k in
    ``ks`` (one above the run's iterations skipped) and project ``cost``, shape (n_iterations,):
    the known cost of every iteration (exact FLOPs, or a full run's seconds)."""
    c = np.asarray(cost, dtype=np.float64)
    if c.shape != (len(schedule),):
        raise ValueError(f"cost must have shape ({len(schedule)},); got {c.shape}")
    truth = float(c.sum())
    out: dict[str, ErrorCurve] = {}
    used = [int(k) for k in ks if k <= len(schedule)]
    for method in methods:
        errs = []
        for k in used:
            sel = make_selector(method, n_points=k, random_state=seed, **(params or {}).get(method, {})).fit(schedule)
            errs.append(relative_error(weighted_projection(c, sel.points_, sel.weights_), truth))
        out[method] = ErrorCurve(method=method, ks=tuple(used), errors=tuple(errs))
    return out
