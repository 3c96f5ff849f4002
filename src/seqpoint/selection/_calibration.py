"""Calibrated weights: the calibration estimator of survey sampling (Deville & Särndal, JASA 1992) adjusts the
counts as little as possible until the points reproduce the run totals of the basis components, known exactly
from the schedule. The raking form ``w = d·exp(x·λ)`` keeps weights positive; a small ridge on ``λ`` (Chambers
1996) keeps the solution defined when no positive weights can reach a component."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from seqpoint._signature import FloatArray
from seqpoint.exceptions import InputError

__all__ = ["calibrate_weights"]

# exp() overflows float64 beyond ~709; a weight ratio of e^700 is already degenerate.
_MAX_EXPONENT = 700.0


def calibrate_weights(components: ArrayLike, design: ArrayLike, totals: ArrayLike, *, ridge: float = 1e-8,
                      max_iter: int = 100) -> FloatArray:
    """Weights (k,) closest to ``design`` (k,) whose ``components`` (k, J) reproduce ``totals`` (J,):
    ``min_w KL(w ‖ d)`` subject to ``Σ w = Σ d``, ``w > 0`` and ``components.T @ w = totals``, by Newton's
    method on the convex dual (at most ``max_iter`` steps of ``O(k·J²)``). When no positive weights reproduce
    the totals, it solves instead ``min_w KL(w ‖ d) + Σ_j r_j² / (2·ridge)`` with ``r_j`` the relative miss on
    component ``j``: each component is then matched as closely as the points allow, the sum of the weights
    still exactly. ``design`` itself comes back when it already reproduces ``totals``."""
    x_raw = np.asarray(components, dtype=np.float64)
    d = np.asarray(design, dtype=np.float64)
    t = np.asarray(totals, dtype=np.float64)
    if x_raw.ndim != 2 or d.shape != (x_raw.shape[0],) or t.shape != (x_raw.shape[1],):
        raise InputError("calibrate_weights needs components of shape (k, J), design of shape (k,) and totals "
                         f"of shape (J,). Got {x_raw.shape}, {d.shape} and {t.shape}.")
    if d.size == 0 or not np.all(np.isfinite(d)) or np.any(d <= 0):
        raise InputError("calibrate_weights needs at least one design weight, all finite and > 0.")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise InputError("calibrate_weights needs every total finite and > 0; drop zero components.")
    if not np.all(np.isfinite(x_raw)) or np.any(x_raw < 0):
        raise InputError("calibrate_weights needs every component value finite and >= 0.")
    if isinstance(ridge, bool) or not isinstance(ridge, int | float) or not ridge > 0:
        raise InputError(f"The 'ridge' parameter of calibrate_weights must be a float > 0. Got {ridge!r}.")

    n = float(d.sum())
    p = d / n
    # Column 0 holds Σ w = n exactly (never penalised); the others are the components
    # scaled so that each target is 1 and a unit of λ means the same for every component.
    x = np.hstack([np.ones((d.shape[0], 1)), x_raw * (n / t)])
    if np.all(np.abs(x.T @ p - 1.0) <= 1e-13):
        return d.copy()  # the design already reproduces every total
    # Exact calibration first; only if the totals are out of reach (the unpenalised
    # dual has no minimum, so Newton does not converge) fall back to the ridge.
    for r in (0.0, float(ridge)):
        pen = np.concatenate([[0.0], np.full(t.shape[0], r)])
        lam, converged = _newton(x, p, pen, max_iter)
        if converged:
            break
    q = p * _ratios(x, lam)
    return q * (n / float(q.sum()))  # type: ignore[no-any-return]


def _ratios(x: FloatArray, lam: FloatArray) -> FloatArray:
    return np.exp(np.minimum(x @ lam, _MAX_EXPONENT))  # type: ignore[no-any-return]


def _newton(x: FloatArray, p: FloatArray, pen: FloatArray, max_iter: int) -> tuple[FloatArray, bool]:
    """Minimise the dual ``Σ p·exp(x·λ) − Σ λ + ½ Σ pen·λ²``; return λ and convergence."""

    def dual(lam: FloatArray) -> float:
        return float(p @ _ratios(x, lam) - lam.sum() + 0.5 * pen @ (lam * lam))

    lam = np.zeros(x.shape[1])
    for _ in range(max_iter):
        q = p * _ratios(x, lam)
        grad = x.T @ q - 1.0 + pen * lam
        if float(np.max(np.abs(grad))) <= 1e-12:
            return lam, True
        hess = x.T @ (q[:, None] * x) + np.diag(pen)
        step = np.linalg.lstsq(hess, grad, rcond=None)[0]
        f0, slope, a = dual(lam), float(grad @ step), 1.0
        while a > 1e-12 and dual(lam - a * step) > f0 - 1e-4 * a * slope:
            a *= 0.5
        if a <= 1e-12:
            break
        lam = lam - a * step
    return lam, False
