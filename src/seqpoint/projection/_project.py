"""Project whole-run totals of any metric from per-SeqPoint measurements, with an interval.

Two projections:

``weighted``
    The SeqPoint paper's ``total = Σ_i weight_i · value_i``.
``interpolated``
    Fit the metric against the signature through the measured points and apply the
    fit to every iteration. The fit is a least-squares model on ``1``, padded tokens
    and the attention term (as many of them as there are points, up to three), plus
    the model's residuals at the points interpolated piecewise-linearly along the cost
    proxy, so it passes exactly through every measured point; a measured signature
    keeps its measured value. It is exact for a cost linear in tokens (two or more
    points) and when every signature is measured.

Error estimate (no full run needed), reported as an interval around the total:

* representation: ``max(|T_weighted − T_interpolated|, b·|T|/(1 − b), z·σ_rough)``, three
  views of how far the points' weights and values can be from the run's:

  - the two projections use the points differently and disagree by about the cost's
    curvature between them (not available with a single point);
  - ``b`` is the selection's basis bound (applied as ``b·|T|/(1 − b)``, since it
    is relative to the unknown true total; ``2b·|T|`` from ``b = 1/2`` on), the larger of
    ``SeqPoints.meta["estimated_error"]`` (for SeqPoint the worst relative error of the
    *count* weights on a basis of elementary costs, see
    :func:`seqpoint.selection.basis_components`; it stays meaningful when the weights
    are calibrated, whose own basis error is 0 by construction) and the basis error of
    the weights of the points actually measured (renormalised when some failed);
  - ``σ_rough`` is the standard error of the representatives' deviation from their
    groups' cost where the cost is not smooth in the signature (see
    :meth:`_Projector.roughness`), estimated from the residuals of a smooth fit
    through the points or from the interpolation's leave-one-out error, whichever is
    smaller, times the normal quantile ``z`` of ``confidence``.

  The disagreement alone is too narrow: where both projections get the linear part
  right they agree to far better than either is right. On the paper table's
  noise-free exact FLOPs and roofline totals (``benchmarks/_paper_exact.py``, 7 cases
  × k = 1..20 of SeqPoint with calibrated weights) it contained the exact total in 38%
  of case × k (median half-width 0.0012% against a median error of 0.027%); adding
  ``b·|T|`` raised that to about 80% (median half-width 0.32%), adding ``σ_rough`` as well
  (a staircase in DeepSpeech2's strided convolutions, GNMT's source against target
  tokens, which no basis component separates) to 99% (median half-width 0.33% for
  FLOPs, 0.51% for roofline times);
* measurement noise: each point's standard error from its repeats
  (``Measurement.samples[metric]``: ``std/√n``; else ``metric_iqr/1.349``), propagated
  exactly through the projection, which is linear in the measured values, times the
  normal quantile of ``confidence``.

The interval is ``total ± (representation + noise)``. Metrics whose name contains
``peak`` (peak memory) are a maximum over the run, not a sum: their total is the largest
value of the interpolated fit over all signatures, for both methods.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from seqpoint.exceptions import ConfigError, InputError
from seqpoint.measurements import Measurement, Measurements
from seqpoint.projection._match import match_measurements, seqpoint_rows
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import (
    BaseSelector,
    SeqPoints,
    SignatureTable,
    basis_components,
    cost_proxy,
    signature_proxy,
    signature_table,
)

__all__ = ["METHODS", "Projection", "cold_steps", "fitted_costs", "project", "project_cost"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Projection methods accepted by :func:`project` and ``seqpoint project --method``.
METHODS: tuple[str, ...] = ("weighted", "interpolated")

# Summary statistics of repeats, not additive quantities: never projected per iteration.
# ``*_first`` (a shape's first, cold step) is paid once per unique signature and is
# projected by :func:`_first_occurrence` instead.
_SPREAD_SUFFIXES = ("_iqr", "_std", "_stdev", "_var", "_mad", "_min", "_max", "_cv", "_n", "_repeats",
                    "_first")


# Totals derived from time_s and the cold first steps, not measured metrics of their own.
_DERIVED = frozenset({"run_time_s", "first_occurrence_s"})

# Harness bookkeeping recorded beside the metrics (how many repeats ran): not a cost.
_BOOKKEEPING = frozenset(
    {"repeats", "onednn_primitives_new", "onednn_primitives_shared", "onednn_cache_capacity"}
)


def _is_peak(metric: str) -> bool:
    return "peak" in metric


# ---------------------------------------------------------------------------- context
@dataclass(frozen=True, eq=False)
class _Context:
    """Signature-level view of a schedule shared by all projections of it."""

    table: SignatureTable
    counts: FloatArray
    proxy: FloatArray
    features: FloatArray  # (m, 3): 1, padded tokens, attention term; columns scaled to max 1
    basis: FloatArray  # (m, J) elementary components with a non-zero total
    basis_totals: FloatArray


_CONTEXTS: weakref.WeakKeyDictionary[IterationSchedule, _Context] = weakref.WeakKeyDictionary()


def _context(schedule: IterationSchedule) -> _Context:
    ctx = _CONTEXTS.get(schedule)
    if ctx is not None:
        return ctx
    table = signature_table(schedule)
    counts = table.counts.astype(np.float64)
    proxy = signature_proxy(cost_proxy("attention"), schedule, table, owner="project")
    names, comps = basis_components(table.as_schedule())
    feats = comps[:, [names.index("iteration"), names.index("tokens"), names.index("quadratic")]]
    scale = np.max(np.abs(feats), axis=0)
    feats = feats / np.where(scale > 0, scale, 1.0)
    totals = counts @ comps
    keep = totals > 0
    ctx = _Context(table, counts, proxy, feats, comps[:, keep], totals[keep])
    _CONTEXTS[schedule] = ctx
    return ctx


def _interpolate(ctx: _Context, sig: IntArray, values: FloatArray) -> FloatArray:
    """Fitted value of every signature from measured ``values`` at signatures ``sig``.

    Returns
    -------
    ndarray of shape (n_unique,)
    """
    distinct = np.unique(sig).shape[0]
    if distinct == 1:
        # One measured signature (possibly several points): scale along the proxy.
        p0 = ctx.proxy[sig[0]]
        v0 = float(np.mean(values))
        if p0 > 0:
            return v0 * ctx.proxy / p0  # type: ignore[no-any-return]
        return np.full(ctx.proxy.shape[0], v0)
    # As many features as *distinct* measured signatures: more would leave the
    # least-squares fit underdetermined and break exactness for linear costs.
    x = ctx.features[:, : min(distinct, 3)]
    coef, *_ = np.linalg.lstsq(x[sig], values, rcond=None)
    fit = x @ coef
    resid = values - fit[sig]
    xs, inv = np.unique(ctx.proxy[sig], return_inverse=True)
    inv = inv.reshape(-1)
    r_mean = np.bincount(inv, weights=resid) / np.bincount(inv)
    pred = fit + np.interp(ctx.proxy, xs, r_mean)
    s_uniq, s_inv = np.unique(sig, return_inverse=True)
    s_inv = s_inv.reshape(-1)
    pred[s_uniq] = np.bincount(s_inv, weights=values) / np.bincount(s_inv)
    return pred  # type: ignore[no-any-return]


def _rms_relative(values: FloatArray, fit: FloatArray, dof: int) -> float:
    scale = np.maximum(np.abs(values), np.abs(fit))
    rel = np.divide(values - fit, scale, out=np.zeros_like(scale), where=scale > 0)
    return float(np.sqrt(np.sum(rel**2) / dof))


class _Projector:
    """Totals of one metric from the values at the ok points (linear in those values)."""

    def __init__(self, ctx: _Context, sig: IntArray, weights: FloatArray, ok: NDArray[np.bool_]) -> None:
        self.ctx = ctx
        self.sig = sig
        self.weights = weights
        self.ok = ok
        self.sig_ok = sig[ok]

    def fitted(self, values_ok: FloatArray) -> FloatArray:
        return _interpolate(self.ctx, self.sig_ok, values_ok)

    def total(self, values_ok: FloatArray, method: str, *, peak: bool = False) -> float:
        if method == "weighted" and not peak and self.ok.all():
            return float(self.weights @ values_ok)
        fit = self.fitted(values_ok)
        if peak:
            return float(np.max(fit))
        if method == "interpolated":
            return float(self.ctx.counts @ fit)
        # Failed points contribute the fitted value of their signature.
        full = np.where(self.ok, 0.0, fit[self.sig])
        full[self.ok] = values_ok
        return float(self.weights @ full)

    def sensitivity(self, method: str) -> FloatArray:
        """``∂T/∂value_j`` for every ok point (the projection is linear in the values)."""
        k = int(self.ok.sum())
        eye = np.eye(k)
        return np.array([self.total(eye[j], method) for j in range(k)])

    def roughness(self, values_ok: FloatArray) -> float:
        """Standard error of the representatives' deviation from their groups' cost.

        A point stands for a group of signatures whose costs it can only match to the
        extent that the cost is smooth in the signature: a staircase (strided
        convolutions round lengths down), a kernel that changes with the shape, or a
        term no basis component follows (source against target tokens) moves the
        representative off its group's mean. That deviation is estimated from the
        points themselves: the relative residuals ``ρ`` of the least-squares fit on the
        interpolation's features (``1``, tokens, attention term, as many as there are
        distinct points up to three), with ``n − p`` degrees of freedom, or, when
        smaller, the RMS relative error of the interpolation at each interior point
        left out (four or more distinct points); taken as independent across groups of
        total ``w_j·v_j``: ``ρ·sqrt(Σ_j (w_j·v_j)²)``.
        0 when there are no degrees of freedom or every signature of the run is
        measured (no point stands for any other signature).
        """
        sig = self.sig_ok
        distinct = np.unique(sig).shape[0]
        if distinct >= self.ctx.counts.shape[0]:
            return 0.0
        p = min(distinct, 3)
        dof = sig.shape[0] - p
        if dof <= 0:
            return 0.0
        x = self.ctx.features[sig, :p]
        coef, *_ = np.linalg.lstsq(x, values_ok, rcond=None)
        fit = x @ coef
        rho = _rms_relative(values_ok, fit, dof)
        # A cost the global fit cannot follow (measured time: the batch size changes,
        # kernels switch) but that is smooth between neighbours is judged by the
        # interpolation's own leave-one-out error instead: ±18% -> ±6.8% on the demo's
        # measured time, with the same 99.3% calibration on the exact paper-table costs.
        loo = self._leave_one_out(values_ok)
        if loo is not None:
            rho = min(rho, loo)
        w = self.weights[self.ok]
        if w.sum() <= 0:
            return 0.0
        w = w * (self.ctx.counts.sum() / w.sum())
        return rho * float(np.sqrt(np.sum((w * values_ok) ** 2)))

    def _leave_one_out(self, values_ok: FloatArray) -> float | None:
        """RMS relative error of the interpolation at each interior point left out."""
        sig = self.sig_ok
        uniq = np.unique(sig)
        if uniq.shape[0] < 4:
            return None
        order = uniq[np.argsort(self.ctx.proxy[uniq], kind="stable")]
        errs = []
        for s_j in order[1:-1]:
            keep = sig != s_j
            pred = float(_interpolate(self.ctx, sig[keep], values_ok[keep])[s_j])
            actual = float(np.mean(values_ok[sig == s_j]))
            scale = max(abs(actual), abs(pred))
            errs.append((actual - pred) / scale if scale > 0 else 0.0)
        return float(np.sqrt(np.mean(np.square(errs))))

    def basis_bound(self) -> float:
        """Worst relative error of the ok points' weights on the elementary cost basis."""
        w = self.weights[self.ok]
        w = w * (self.ctx.counts.sum() / w.sum())
        proj = w @ self.ctx.basis[self.sig_ok]
        t = self.ctx.basis_totals
        return float(np.max(np.abs(proj - t) / t)) if t.size else 0.0


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True, kw_only=True)
class Projection:
    """Projected whole-run totals with their intervals."""

    n_iterations: int
    """Iterations of the run."""
    method: str
    """``weighted`` or ``interpolated``."""
    totals: dict[str, float]
    """Metric to projected run total (``breakdown_s.<category>`` for each op category)."""
    interval: dict[str, tuple[float, float]]
    """Metric to ``(low, high)`` at ``confidence``."""
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
    (shapes met again after oneDNN's primitive cache dropped them); empty when no
    first-occurrence term was projected."""

    def relative_halfwidth(self, metric: str) -> float:
        """Half-width of the interval relative to the total."""
        lo, hi = self.interval[metric]
        t = self.totals[metric]
        return (hi - lo) / 2 / abs(t) if t else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The ``seqpoint project --json`` shape (plus extra keys)."""
        return {
            "n_iterations": self.n_iterations,
            "projected": dict(self.totals),
            "interval": {k: [lo, hi] for k, (lo, hi) in self.interval.items()},
            "method": self.method,
            "complete": self.complete,
            "failed": list(self.failed),
            "n_points": self.n_points,
            "confidence": self.confidence,
            **({"cold_steps": dict(self.cold_steps)} if self.cold_steps else {}),
        }


def _check_method(method: str, owner: str) -> None:
    if method not in METHODS:
        raise ConfigError(
            f"The 'method' parameter of {owner} must be one of {', '.join(map(repr, METHODS))}. "
            f"Got {method!r}."
        )


def _check_confidence(confidence: float, owner: str) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 < confidence < 1:
        raise ConfigError(
            f"The 'confidence' parameter of {owner} must be a float in (0, 1). Got {confidence!r}."
        )
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _metric_values(m: Measurement) -> dict[str, float]:
    out = {k: v for k, v in m.metrics.items() if not k.endswith(_SPREAD_SUFFIXES)}
    out.update({f"breakdown_s.{k}": v for k, v in m.breakdown_s.items()})
    return out


def _standard_error(m: Measurement, metric: str) -> float:
    reps = m.samples.get(metric)
    if reps is not None and len(reps) >= 2:
        arr = np.asarray(reps, dtype=np.float64)
        return float(arr.std(ddof=1) / np.sqrt(arr.size))
    iqr = m.metrics.get(f"{metric}_iqr")
    if iqr is not None:
        return float(iqr) / 1.349
    return 0.0


def _select_metrics(ok: Sequence[Measurement], metrics: Iterable[str] | None) -> list[str]:
    per_point = [_metric_values(m) for m in ok]
    plain = set.intersection(*(set(m.metrics) for m in ok)) if ok else set()
    plain = {k for k in plain if not k.endswith(_SPREAD_SUFFIXES) and k not in _BOOKKEEPING}
    cats = set().union(*(set(m.breakdown_s) for m in ok))
    available = sorted(plain) + sorted(f"breakdown_s.{c}" for c in cats)
    if metrics is None:
        if not available:
            raise InputError("The measurements have no metric common to every ok SeqPoint.")
        return available
    chosen = list(metrics)
    for name in chosen:
        if name not in available:
            missing = [i for i, p in enumerate(per_point) if name not in p]
            where = f" (missing at ok point(s) {missing[:5]})" if missing and len(missing) < len(ok) else ""
            raise InputError(
                f"Metric {name!r} is not in every ok measurement{where}. "
                f"Available: {', '.join(available) or 'none'}."
            )
    return chosen


def _selection_bound(seqpoints: SeqPoints) -> float:
    """The selector's relative error bound recorded in ``meta["estimated_error"]`` (0 if none)."""
    value = seqpoints.meta.get("estimated_error")
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value) or value < 0:
        raise InputError(
            f"The SeqPoints' meta['estimated_error'] must be a finite number >= 0 (a fraction) or absent. "
            f"Got {value!r}; write the file again with 'seqpoint select' or delete the key."
        )
    return float(value)


def project(
    schedule: IterationSchedule,
    seqpoints: SeqPoints,
    measurements: Measurements | Iterable[Measurement],
    *,
    method: str = "weighted",
    metrics: Iterable[str] | None = None,
    confidence: float = 0.95,
) -> Projection:
    """Project run totals of measured metrics from the SeqPoints' measurements.

    Parameters
    ----------
    schedule : IterationSchedule
        The whole run.
    seqpoints : SeqPoints
        Points chosen from ``schedule`` (checked: iterations and signatures must match).
    measurements : Measurements or iterable of Measurement
        One per SeqPoint, matched by signature. Points whose status is not ``ok`` are
        projected from the others and the result is marked ``complete=False``.
    method : {"weighted", "interpolated"}
        Projection (see the module docstring).
    metrics : iterable of str, optional
        Metrics to project; default every metric present at all ok points, plus every
        ``breakdown_s.<category>`` (a category absent at a point counts 0 s there).
    confidence : float
        Confidence level of the noise part of the interval, in (0, 1).

    Returns
    -------
    Projection
    """
    _check_method(method, "project")
    z = _check_confidence(confidence, "project")
    rows = seqpoint_rows(schedule, seqpoints)
    matched = match_measurements(seqpoints, measurements)
    ok = np.array([m.ok for m in matched], dtype=bool)
    if not ok.any():
        reasons = "; ".join(f"iteration {p.iteration}: {m.status} {m.message}".strip()
                            for p, m in zip(seqpoints.points, matched, strict=True))
        raise InputError(f"Every SeqPoint failed to measure ({reasons}); nothing to project from.")
    ok_meas = [m for m, good in zip(matched, ok, strict=True) if good]
    requested = None if metrics is None else list(metrics)
    derived = [] if requested is None else [m for m in requested if m in _DERIVED]
    if requested is not None and derived:
        # run_time_s and first_occurrence_s are derived from time_s (and time_s_first).
        requested = [m for m in requested if m not in _DERIVED]
        if "time_s" not in requested:
            requested.append("time_s")
    names = _select_metrics(ok_meas, requested)
    ctx = _context(schedule)
    sig = ctx.table.inverse[rows]
    weights = np.array([p.weight for p in seqpoints.points], dtype=np.float64)
    proj = _Projector(ctx, sig, weights, ok)
    bound = max(_selection_bound(seqpoints), proj.basis_bound())
    # |T_w − T| <= b·T bounds the unknown T by T_w/(1 ± b): a half-width of b·|T_w|/(1 − b)
    # covers both ends. At b >= 1/2 (one point for a wide run) it is capped at 2b·|T_w|.
    bound_factor = bound / (1.0 - min(bound, 0.5))
    sens_cache: dict[str, FloatArray] = {}

    totals: dict[str, float] = {}
    interval: dict[str, tuple[float, float]] = {}
    rep_hw: dict[str, float] = {}
    noise_hw: dict[str, float] = {}
    for name in names:
        vals = np.array([_metric_values(m).get(name, 0.0) for m in ok_meas], dtype=np.float64)
        se = np.array([_standard_error(m, name) for m in ok_meas])
        peak = _is_peak(name)
        total = proj.total(vals, method, peak=peak)
        if peak:
            rep = abs(total - float(vals.max()))
            noise = z * float(se[int(np.argmax(vals))])
        else:
            rep = max(bound_factor * abs(total), z * proj.roughness(vals))
            if ok.sum() >= 2:
                other = "interpolated" if method == "weighted" else "weighted"
                rep = max(rep, abs(total - proj.total(vals, other)))
            if np.any(se > 0):
                if method not in sens_cache:
                    sens_cache[method] = proj.sensitivity(method)
                noise = z * float(np.sqrt(np.sum((sens_cache[method] * se) ** 2)))
            else:
                noise = 0.0
        totals[name] = total
        interval[name] = (total - rep - noise, total + rep + noise)
        rep_hw[name] = rep
        noise_hw[name] = noise
    cold_counts: dict[str, int] = {}
    if "time_s" in totals and (metrics is None or derived):
        first = _first_occurrence(ctx, proj, ok_meas, z)
        if first is not None:
            fo_total, fo_hw, cold_counts = first
            totals["first_occurrence_s"] = fo_total
            interval["first_occurrence_s"] = (fo_total - fo_hw, fo_total + fo_hw)
            lo, hi = interval["time_s"]
            totals["run_time_s"] = totals["time_s"] + fo_total
            interval["run_time_s"] = (lo + fo_total - fo_hw, hi + fo_total + fo_hw)
            rep_hw["first_occurrence_s"], noise_hw["first_occurrence_s"] = 0.0, fo_hw
            rep_hw["run_time_s"] = rep_hw["time_s"]
            noise_hw["run_time_s"] = noise_hw["time_s"] + fo_hw
    return Projection(
        n_iterations=len(schedule),
        method=method,
        totals=totals,
        interval=interval,
        complete=bool(ok.all()),
        failed=tuple(p.iteration for p, good in zip(seqpoints.points, ok, strict=True) if not good),
        n_points=int(ok.sum()),
        confidence=confidence,
        representation=rep_hw,
        noise=noise_hw,
        cold_steps=cold_counts,
    )


def _first_occurrence(
    ctx: _Context, proj: _Projector, ok_meas: Sequence[Measurement], z: float
) -> tuple[float, float, dict[str, int]] | None:
    """Total, half-width and counts (``first``, ``evicted``) of the run's cold steps.

    A run meets each tensor shape once for the first time, and that step pays one-time
    costs (primitive creation, kernel selection) that the steady-state repeats do not.
    Each point's cold first step gives its relative extra ``time_s_first / time_s − 1``;
    the total is their median times the fitted steady-state time of every cold step
    (packed signatures that differ only in ``sum_sq_len`` share a shape). The median,
    not a fit through every point: a cold step is a single sample, and one disturbed
    sample must not be spread over hundreds of shapes (interpolating the raw extras
    projected 19% of a run where the real in-sequence extra was 2%). The half-width is
    the standard error of the median (1.2533 · 1.4826 · MAD / √k) times the same
    steady-state total, times z.

    Cold steps are the first occurrence of each shape and, when the measurements carry
    oneDNN primitive counts (CPU), every step whose shape's primitives an LRU cache of
    the measured capacity has evicted since its last use (see :func:`cold_steps`).
    """
    if not ok_meas or not all("time_s_first" in m.metrics and "time_s" in m.metrics for m in ok_meas):
        return None
    steady = np.array([m.metrics["time_s"] for m in ok_meas])
    first = np.array([m.metrics["time_s_first"] for m in ok_meas])
    good = steady > 0
    if not good.any():
        return None
    rel = first[good] / steady[good] - 1.0
    table = ctx.table
    shape_cols = [table.columns.index(c) for c in ("batch_size", "seq_len", "tgt_len")]
    _, shape_of = np.unique(table.signatures[:, shape_cols], axis=0, return_inverse=True)
    shape_of = shape_of.reshape(-1)
    fitted = np.clip(proj.fitted(steady), 0.0, None)
    per_shape = np.bincount(shape_of).astype(np.float64)
    shape_cost = np.bincount(shape_of, weights=fitted) / per_shape
    run_shapes = shape_of[table.inverse]
    cold = cold_steps(run_shapes, **_primitive_cache(ok_meas))
    cold_total = float(shape_cost[run_shapes[cold]].sum())
    centre = float(np.median(rel))
    k = rel.shape[0]
    if k >= 2:
        mad = float(np.median(np.abs(rel - centre)))
        se = 1.2533 * 1.4826 * mad / np.sqrt(k)
    else:
        se = abs(centre)
    n_first = per_shape.shape[0]  # every shape of the table occurs in the run once first
    counts = {"first": n_first, "evicted": int(cold.sum()) - n_first}
    return max(centre, 0.0) * cold_total, z * se * cold_total, counts


def _primitive_cache(ok_meas: Sequence[Measurement]) -> dict[str, int]:
    """``cold_steps`` arguments from the oneDNN counts the harness recorded (median)."""
    names = ("onednn_primitives_new", "onednn_primitives_shared", "onednn_cache_capacity")
    if not all(all(n in m.metrics for n in names) for m in ok_meas):
        return {}
    new, shared, cap = (int(np.median([m.metrics[n] for m in ok_meas])) for n in names)
    return {"per_shape": new, "shared": shared, "capacity": cap}


def cold_steps(
    shapes: ArrayLike, *, per_shape: int = 0, shared: int = 0, capacity: int = 0
) -> NDArray[np.bool_]:
    """Which steps of a run meet their shape cold: first occurrences and cache misses.

    oneDNN keeps the primitives of every shape in one LRU cache of ``capacity`` entries
    per process; each step uses its shape's ``per_shape`` entries and ``shared`` entries
    that every shape uses. A step whose shape was last used ``d`` distinct other shapes
    ago finds its primitives evicted when ``shared + per_shape · (d + 1) > capacity``
    (the LRU stack-distance rule), and pays its one-time costs again. With ``per_shape = 0``
    (no counts: GPU, a library without a cache) only first occurrences are cold.

    Parameters
    ----------
    shapes : array_like of int, shape (n_iterations,)
        Shape id of every step, in run order.
    per_shape, shared, capacity : int
        Entries new per shape, entries shared by all shapes, cache capacity.

    Returns
    -------
    ndarray of bool, shape (n_iterations,)
        True where the step is cold.
    """
    seq = np.asarray(shapes, dtype=np.int64).reshape(-1)
    if per_shape <= 0 or capacity <= 0:
        _, first = np.unique(seq, return_index=True)
        cold = np.zeros(seq.shape[0], dtype=bool)
        cold[first] = True
        return cold
    # Whole shapes the cache holds beside the shared entries: by Mattson's stack
    # property the entry-level LRU misses exactly when a shape-level LRU of this size does.
    evict_at = max(0, (capacity - shared) // per_shape)
    cache: OrderedDict[int, None] = OrderedDict()
    cold = np.zeros(seq.shape[0], dtype=bool)
    for i, shape in enumerate(seq.tolist()):
        if shape in cache:
            cache.move_to_end(shape)
            continue
        cold[i] = True
        cache[shape] = None
        if len(cache) > evict_at:
            cache.popitem(last=False)
    return cold


def project_cost(
    schedule: IterationSchedule,
    selection: BaseSelector | SeqPoints,
    cost: Callable[[IterationSchedule], ArrayLike] | ArrayLike,
    *,
    method: str = "weighted",
) -> float:
    """Project the run total of a cost known for every iteration (synthetic benchmarks).

    Parameters
    ----------
    schedule : IterationSchedule
        The run.
    selection : fitted selector or SeqPoints
        The points and weights.
    cost : callable or array_like of shape (n_iterations,)
        ``cost(schedule)`` or the per-iteration costs themselves; only the chosen
        iterations' values are used, as if they had been measured.
    method : {"weighted", "interpolated"}
        Projection.

    Returns
    -------
    float
        Projected run total; compare with ``cost.sum()``.
    """
    _check_method(method, "project_cost")
    values = np.asarray(cost(schedule) if callable(cost) else cost, dtype=np.float64)
    if values.shape != (len(schedule),):
        raise InputError(
            f"project_cost needs one cost per iteration, shape ({len(schedule)},). Got {values.shape}."
        )
    if isinstance(selection, SeqPoints):
        rows = seqpoint_rows(schedule, selection)
        weights = np.array([p.weight for p in selection.points], dtype=np.float64)
    else:
        rows = selection.points_
        weights = selection.weights_
        if selection.n_iterations_ != len(schedule):
            raise InputError(
                f"The selector was fitted on {selection.n_iterations_} iterations but the schedule has "
                f"{len(schedule)}; pass the fitted schedule."
            )
    if method == "weighted":
        return float(weights @ values[rows])
    ctx = _context(schedule)
    proj = _Projector(ctx, ctx.table.inverse[rows], weights, np.ones(rows.shape[0], dtype=bool))
    return proj.total(values[rows], method)


def fitted_costs(
    schedule: IterationSchedule,
    seqpoints: SeqPoints,
    measurements: Measurements | Iterable[Measurement],
    metric: str = "time_s",
) -> FloatArray:
    """The interpolated projection's cost model evaluated at every iteration.

    This is the curve the ``interpolated`` method sums: it passes through every ok
    measured point and follows the least-squares fit on tokens and the attention term in
    between. Reports plot it against ``seq_len`` beside the measured points.

    Returns
    -------
    ndarray of shape (n_iterations,)
        Fitted ``metric`` of every iteration (e.g. seconds per step for ``time_s``).
    """
    rows = seqpoint_rows(schedule, seqpoints)
    matched = match_measurements(seqpoints, measurements)
    ok = np.array([m.ok and metric in _metric_values(m) for m in matched], dtype=bool)
    if not ok.any():
        raise InputError(f"No SeqPoint has an ok measurement of {metric!r}; nothing to fit.")
    ctx = _context(schedule)
    vals = np.array([_metric_values(m)[metric] for m, good in zip(matched, ok, strict=True) if good])
    fit = _interpolate(ctx, ctx.table.inverse[rows][ok], vals)
    return fit[ctx.table.inverse]  # type: ignore[no-any-return]
