"""The interval of a projection, estimated without a full run: ``total ± (representation + noise)``,
representation ``max(|T_weighted − T_interpolated|, b·|T|/(1 − b), z·σ_rough)`` and noise the
points' standard errors propagated (``∂T/∂value_j``), at least Student's ``t`` times the
spread of ``P >= 2`` worker processes' totals. docs/projection.md explains and calibrates it."""

from __future__ import annotations

import math
from functools import cached_property
from statistics import NormalDist

import numpy as np

from seqpoint._params import Interval, check_params
from seqpoint._signature import FloatArray
from seqpoint.exceptions import InputError
from seqpoint.projection._model import PointProjector
from seqpoint.selection import SeqPoints, basis_error

__all__ = ["IntervalEstimator", "confidence_quantile", "leave_one_out_error", "process_noise", "roughness",
           "student_quantile"]


def confidence_quantile(confidence: float, owner: str) -> float:
    """Normal quantile ``z`` of a two-sided ``confidence`` level (checked to be in (0, 1))."""
    check_params(owner, {"confidence": [Interval(float, 0, 1, closed="neither")]}, {"confidence": confidence})
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def student_quantile(confidence: float, df: int) -> float:
    """Two-sided quantile of Student's t with ``df >= 1`` degrees of freedom (``P − 1`` for ``P``
    worker processes): ``t`` with ``P(|T| <= t) = confidence``, e.g. 12.706 at ``df = 1``, 4.303 at 2
    (95%), 1.960 as ``df`` grows. Exact: the coverage is a finite series in ``sin θ``, ``cos θ``
    (Abramowitz & Stegun 26.7.3-4), bisected."""
    check_params("student_quantile", {"confidence": [Interval(float, 0, 1, closed="neither")],
                                      "df": [Interval(int, 1)]}, {"confidence": confidence, "df": df})

    def covered(theta: float) -> float:
        c2, term = math.cos(theta) ** 2, 1.0
        if df % 2:  # odd: 2/π (θ + sin θ cos θ (1 + 2/3 cos²θ + 2·4/(3·5) cos⁴θ + ...))
            series = 1.0 if df > 1 else 0.0
            for j in range(1, (df - 1) // 2):
                term *= c2 * (2 * j) / (2 * j + 1)
                series += term
            return 2.0 / math.pi * (theta + math.sin(theta) * math.cos(theta) * series)
        series = 1.0  # even: sin θ (1 + 1/2 cos²θ + 1·3/(2·4) cos⁴θ + ...)
        for j in range(1, df // 2):
            term *= c2 * (2 * j - 1) / (2 * j)
            series += term
        return math.sin(theta) * series

    lo, hi = 0.0, math.pi / 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if covered(mid) < confidence else (lo, mid)
        if hi - lo < 1e-15:
            break
    return math.sqrt(df) * math.tan((lo + hi) / 2)


def process_noise(totals: FloatArray, confidence: float) -> float:
    """Half-width ``t(P − 1) · std(totals) / √P`` from ``totals``, shape ``(P,)``: the run total
    projected from each worker process's own values (0 with fewer than two processes)."""
    p = totals.shape[0]
    return student_quantile(confidence, p - 1) * float(totals.std(ddof=1)) / math.sqrt(p) if p >= 2 else 0.0


def roughness(proj: PointProjector, values_ok: FloatArray) -> float:
    """Standard error of the representatives' deviation from their groups' cost (a point matches its group only
    as far as the cost is smooth in the signature): the relative residual ``ρ`` of the least-squares fit on up
    to three features (``n − p`` degrees of freedom), or the smaller :func:`leave_one_out_error`, times
    ``sqrt(Σ_j (w_j·v_j)²)``. 0 without degrees of freedom or when every signature of the run is measured."""
    model, sig = proj.model, proj.sig_ok
    distinct = np.unique(sig).shape[0]
    p = min(distinct, 3)
    dof = sig.shape[0] - p
    if distinct >= model.counts.shape[0] or dof <= 0:
        return 0.0
    x = model.features[sig, :p]
    coef, *_ = np.linalg.lstsq(x, values_ok, rcond=None)
    fit = x @ coef
    # Root mean square of (values − fit) / max(|values|, |fit|) over the degrees of freedom.
    scale = np.maximum(np.abs(values_ok), np.abs(fit))
    rel = np.divide(values_ok - fit, scale, out=np.zeros_like(scale), where=scale > 0)
    rho = float(np.sqrt(np.sum(rel**2) / dof))
    # A cost the global fit cannot follow but smooth between neighbours (measured time):
    # ±18% -> ±6.8% on the demo, the same 99.3% calibration on the paper-table costs.
    loo = leave_one_out_error(proj, values_ok)
    if loo is not None:
        rho = min(rho, loo)
    w = proj.weights[proj.ok]
    if w.sum() <= 0:
        return 0.0
    w = w * (model.counts.sum() / w.sum())
    return rho * float(np.sqrt(np.sum((w * values_ok) ** 2)))


def leave_one_out_error(proj: PointProjector, values_ok: FloatArray) -> float | None:
    """RMS relative error of the interpolation at each interior point (along the proxy) left
    out; None with fewer than four distinct measured signatures."""
    model, sig = proj.model, proj.sig_ok
    uniq = np.unique(sig)
    if uniq.shape[0] < 4:
        return None
    order = uniq[np.argsort(model.proxy[uniq], kind="stable")]
    errs = []
    for s_j in order[1:-1]:
        keep = sig != s_j
        pred = float(model.interpolate(sig[keep], values_ok[keep])[s_j])
        actual = float(np.mean(values_ok[sig == s_j]))
        scale = max(abs(actual), abs(pred))
        errs.append((actual - pred) / scale if scale > 0 else 0.0)
    return float(np.sqrt(np.mean(np.square(errs))))


def selection_bound(seqpoints: SeqPoints) -> float:
    """The selector's basis bound recorded in ``meta["estimated_error"]`` (0 if none): for SeqPoint the count
    weights' worst relative error on the cost basis, still meaningful when the weights are calibrated."""
    value = seqpoints.meta.get("estimated_error")
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value) or value < 0:
        raise InputError(f"The SeqPoints' meta['estimated_error'] must be a finite number >= 0 (a fraction) or "
                         f"absent. Got {value!r}; write the file again with 'seqpoint select' or delete the key.")
    return float(value)


class IntervalEstimator:
    """Half-widths of the intervals of one projection (one method, one set of points), scaled by
    ``confidence`` (checked by the caller) and its normal quantile ``z``."""

    def __init__(self, proj: PointProjector, seqpoints: SeqPoints, method: str, confidence: float,
                 z: float) -> None:
        self.proj, self.method, self.confidence, self.z = proj, method, confidence, z
        w = proj.weights[proj.ok]  # the ok points' weights, renormalised to the run's iterations
        bound = max(selection_bound(seqpoints),
                    basis_error(w * (proj.model.counts.sum() / w.sum()), proj.model.basis[proj.sig_ok],
                                proj.model.basis_totals))
        # |T_w − T| <= b·T bounds the unknown T by T_w/(1 ± b): a half-width of b·|T_w|/(1 − b)
        # covers both ends. At b >= 1/2 (one point for a wide run) it is capped at 2b·|T_w|.
        self.bound_factor = bound / (1.0 - min(bound, 0.5))

    def representation(self, values_ok: FloatArray, total: float, *, peak: bool) -> float:
        """Representation half-width of ``total`` (a maximum's distance to the measured one for ``peak``)."""
        if peak:
            return abs(total - float(values_ok.max()))
        rep = max(self.bound_factor * abs(total), self.z * roughness(self.proj, values_ok))
        if self.proj.ok.sum() >= 2:
            other = "interpolated" if self.method == "weighted" else "weighted"
            rep = max(rep, abs(total - self.proj.total(values_ok, other)))
        return rep

    def process_totals(self, per_process: FloatArray) -> FloatArray:
        """``(P,)``: the total projected from each worker process's own ``(P, points)`` values."""
        return per_process @ self._weights

    def noise(self, values_ok: FloatArray, se: FloatArray, *, peak: bool, per_process: FloatArray | None = None
              ) -> float:
        """Noise half-width from the points' standard errors ``se`` (independent) and, when given,
        the ``(P, points)`` values each worker process measured (:func:`process_noise`)."""
        if peak:
            return self.z * float(se[int(np.argmax(values_ok))])
        points = self.z * float(np.sqrt(np.sum((self._weights * se) ** 2))) if np.any(se > 0) else 0.0
        if per_process is None:
            return points
        return max(points, process_noise(self.process_totals(per_process), self.confidence))

    @cached_property
    def _weights(self) -> FloatArray:
        """``∂T/∂value_j`` for every ok point (the projection is linear in the values)."""
        return np.array([self.proj.total(unit, self.method) for unit in np.eye(int(self.proj.ok.sum()))])
