"""The interpolated cost model of a schedule (:class:`ScheduleModel`, the signature-level view
every projection of it shares), and totals of one metric from the points (:class:`PointProjector`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from seqpoint._params import Options, check_params
from seqpoint._signature import FloatArray, IntArray
from seqpoint.exceptions import InputError
from seqpoint.measurements import STEADY_TIME, Measurement, Measurements
from seqpoint.measurements.metrics import projectable_values
from seqpoint.projection._match import match_measurements, seqpoint_rows
from seqpoint.schedule import IterationSchedule, SignatureTable, signature_table
from seqpoint.selection import COST_MODELS, SeqPoints, basis_components, weighted_projection

__all__ = ["METHODS", "PointProjector", "ScheduleModel", "check_method", "fitted_costs", "model_for"]

#: Projection methods accepted by :func:`project` and ``seqpoint project --method``.
METHODS: tuple[str, ...] = ("weighted", "interpolated")


def check_method(method: str, owner: str) -> None:
    """Raise ConfigError unless ``method`` is one of :data:`METHODS`."""
    check_params(owner, {"method": [Options(METHODS)]}, {"method": method})


@dataclass(frozen=True, eq=False)
class ScheduleModel:
    """Signature-level view of a schedule shared by all projections of it (``m`` signatures)."""

    schedule: IterationSchedule
    """The run it was built from."""
    table: SignatureTable
    counts: FloatArray
    """Iterations with every signature, shape ``(m,)``."""
    proxy: FloatArray
    """``attention`` cost proxy of every signature."""
    features: FloatArray
    """``1``, padded tokens and the attention term, each column scaled to max 1, shape ``(m, 3)``."""
    basis: FloatArray
    """Elementary cost components with a non-zero run total, shape ``(m, J)``."""
    basis_totals: FloatArray
    """Run total of every kept component, shape ``(J,)``."""

    @classmethod
    def from_schedule(cls, schedule: IterationSchedule) -> ScheduleModel:
        """Collapse ``schedule`` to its signatures and evaluate the model's features."""
        table = signature_table(schedule)
        counts = table.counts.astype(np.float64)
        proxy = COST_MODELS.get("attention")()(table.as_schedule())  # a per-signature formula
        names, comps = basis_components(table.as_schedule())
        feats = comps[:, [names.index("iteration"), names.index("tokens"), names.index("quadratic")]]
        scale = np.max(np.abs(feats), axis=0)
        feats = feats / np.where(scale > 0, scale, 1.0)
        totals = counts @ comps
        keep = totals > 0
        return cls(schedule, table, counts, proxy, feats, comps[:, keep], totals[keep])

    def check_schedule(self, schedule: IterationSchedule) -> None:
        """Raise InputError unless this model was built from ``schedule`` (or an equal one)."""
        if self.schedule is not schedule and not (self.schedule.is_packed == schedule.is_packed
                                                  and self.schedule.equals(schedule)):
            raise InputError("The projection context was built from another schedule; "
                             "build it with ScheduleModel.from_schedule(schedule) for this one.")

    def interpolate(self, sig: IntArray, values: FloatArray) -> FloatArray:
        """Fitted value of every signature, shape ``(m,)``, from ``values`` (k,) measured at signature
        indices ``sig`` (k,; repeats allowed): a least-squares fit on ``1``, tokens and the attention
        term plus the residuals interpolated along the proxy, through every measured point."""
        distinct = np.unique(sig).shape[0]
        if distinct == 1:
            # One measured signature (possibly several points): scale along the proxy.
            p0, v0 = self.proxy[sig[0]], float(np.mean(values))
            if p0 > 0:
                return v0 * self.proxy / p0  # type: ignore[no-any-return]
            return np.full(self.proxy.shape[0], v0)
        # As many features as the points determine (more would break exactness for linear
        # costs); collinear features at distinct signatures count once: the rank decides.
        n_feat = min(distinct, 3)
        while n_feat > 1 and np.linalg.matrix_rank(self.features[sig, :n_feat]) < n_feat:
            n_feat -= 1
        x = self.features[:, :n_feat]
        coef, *_ = np.linalg.lstsq(x[sig], values, rcond=None)
        fit = x @ coef
        xs, inv = np.unique(self.proxy[sig], return_inverse=True)
        r_mean = np.bincount(inv.reshape(-1), weights=values - fit[sig]) / np.bincount(inv.reshape(-1))
        pred = fit + np.interp(self.proxy, xs, r_mean)
        s_uniq, s_inv = np.unique(sig, return_inverse=True)
        pred[s_uniq] = np.bincount(s_inv.reshape(-1), weights=values) / np.bincount(s_inv.reshape(-1))
        return pred  # type: ignore[no-any-return]


class PointProjector:
    """Totals of one metric from its values at the ok points (linear in those values): ``sig``,
    ``weights`` and ``ok`` (k,) are every SeqPoint's signature index, weight and success (failed
    points are projected from the others)."""

    def __init__(self, model: ScheduleModel, sig: IntArray, weights: FloatArray, ok: NDArray[np.bool_]) -> None:
        self.model, self.sig, self.weights, self.ok = model, sig, weights, ok
        self.sig_ok = sig[ok]

    def fitted(self, values_ok: FloatArray) -> FloatArray:
        """The interpolated model of every signature, shape ``(n_unique,)``."""
        return self.model.interpolate(self.sig_ok, values_ok)

    def total(self, values_ok: FloatArray, method: str, *, peak: bool = False) -> float:
        """Run total (or, with ``peak``, run maximum) of the metric by ``method``."""
        if method == "weighted" and not peak and self.ok.all():
            return weighted_projection(values_ok, None, self.weights)
        fit = self.fitted(values_ok)
        if peak:
            return float(np.max(fit))
        if method == "interpolated":
            return float(self.model.counts @ fit)
        # Failed points contribute the fitted value of their signature.
        full = np.where(self.ok, 0.0, fit[self.sig])
        full[self.ok] = values_ok
        return weighted_projection(full, None, self.weights)


def fitted_costs(schedule: IterationSchedule, seqpoints: SeqPoints, measurements: Measurements | Iterable[Measurement],
                 metric: str = STEADY_TIME, *, context: ScheduleModel | None = None) -> FloatArray:
    """The ``interpolated`` method's cost model of ``metric`` at every iteration, shape
    ``(n_iterations,)`` (seconds per step for ``time_s``), through every ok measured point: the curve
    reports plot against ``seq_len``. ``measurements`` are matched to the points by signature."""
    rows = seqpoint_rows(schedule, seqpoints)
    matched = match_measurements(seqpoints, measurements)
    ok = np.array([m.ok and metric in projectable_values(m) for m in matched], dtype=bool)
    if not ok.any():
        raise InputError(f"No SeqPoint has an ok measurement of {metric!r}; nothing to fit.")
    vals = np.array([projectable_values(m)[metric] for m, good in zip(matched, ok, strict=True) if good])
    model = model_for(schedule, context)
    fit = model.interpolate(model.table.inverse[rows][ok], vals)
    return fit[model.table.inverse]  # type: ignore[no-any-return]


def model_for(schedule: IterationSchedule, context: ScheduleModel | None) -> ScheduleModel:
    """``context`` checked against ``schedule``, or a model built for it."""
    if context is None:
        return ScheduleModel.from_schedule(schedule)
    context.check_schedule(schedule)
    return context
