"""Cost proxies: a cheap number per iteration, from its signature alone, that orders iterations by expected
cost. A proxy is a name in :data:`COST_MODELS`, any callable ``f(schedule) -> ndarray of shape
(n_iterations,)``, or a :class:`PilotTable`. Also the two sums every stage projects with:
:func:`weighted_projection` and :func:`basis_error` (over the components of :func:`basis_components`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import numpy as np
from numpy.typing import ArrayLike

from seqpoint._params import Constraint, Interval, Validated
from seqpoint._registry import Registry
from seqpoint._signature import SIGNATURE_FIELDS, FloatArray, IntArray, Signature
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.schedule import IterationSchedule, SignatureTable, signature_table

__all__ = ["COST_MODELS", "CostProxy", "PilotTable", "SignatureCosts", "basis_components", "basis_error",
           "cost_proxy", "describe_cost", "evaluate_proxy", "signature_proxy", "weighted_projection"]


class CostProxy(Protocol):
    """Anything that maps a schedule to one cost value per iteration; a proxy class with
    ``per_signature = True`` depends on the signature only, so it runs once per unique signature."""

    def __call__(self, schedule: IterationSchedule) -> FloatArray: ...


class _PerSignature:
    per_signature: ClassVar[bool] = True  # a proxy of the signature alone: run once per signature


#: Named cost proxies, shared by the API (``cost="tokens"``) and ``seqpoint select --cost``.
COST_MODELS: Registry[Callable[[], CostProxy]] = Registry("cost model")


def _quadratic(schedule: IterationSchedule) -> FloatArray:
    """Attention-like term: ``b·s²`` (``sum_sq_len`` when packed) plus ``b·t² + b·s·t``."""
    b = schedule.batch_size.astype(np.float64)
    s = schedule.seq_len.astype(np.float64)
    t = schedule.tgt_len.astype(np.float64)
    src = schedule.sum_sq_len.astype(np.float64) if schedule.is_packed else b * s * s
    return src + b * t * t + b * s * t


@COST_MODELS.register("attention")
@dataclass(frozen=True, kw_only=True)
class AttentionCost(_PerSignature, Validated):
    """Padded tokens plus a quadratic attention term, ``padded_tokens + quad / (6·d_model)``: for a
    transformer layer of width ``d`` the dense layers cost about ``24·d²`` FLOPs per token and
    attention ``4·s·d``, so the quadratic term weighs ``1/(6·d)`` per token."""

    d_model: int = 768
    """Model width that sets the weight of the quadratic term."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {"d_model": [Interval(int, 1)]}

    def __call__(self, schedule: IterationSchedule) -> FloatArray:
        return schedule.padded_tokens.astype(np.float64) + _quadratic(schedule) / (6.0 * self.d_model)


@COST_MODELS.register("tokens")
@dataclass(frozen=True, kw_only=True)
class TokensCost(_PerSignature):
    """Padded tokens: cost linear in the tokens the model computes on (RNNs, MLPs)."""

    def __call__(self, schedule: IterationSchedule) -> FloatArray:
        return schedule.padded_tokens.astype(np.float64)


@COST_MODELS.register("quadratic")
@dataclass(frozen=True, kw_only=True)
class QuadraticCost(_PerSignature):
    """The quadratic attention term alone, ``b·s² + b·t² + b·s·t`` (``sum_sq_len`` when packed)."""

    def __call__(self, schedule: IterationSchedule) -> FloatArray:
        return _quadratic(schedule)


@COST_MODELS.register("seq_len")
@dataclass(frozen=True, kw_only=True)
class SeqLenCost(_PerSignature):
    """``seq_len + tgt_len``: the SeqPoint paper's grouping key (sequential RNN steps)."""

    def __call__(self, schedule: IterationSchedule) -> FloatArray:
        return (schedule.seq_len + schedule.tgt_len).astype(np.float64)


@dataclass(frozen=True, kw_only=True)
class PilotTable(_PerSignature):
    """Measured cost of a few signatures (exactly theirs), interpolated to every other signature:
    the piecewise linear interpolation of ``cost / base(signature)`` against ``base(signature)``
    (``base`` is the ``attention`` proxy), times ``base``; outside the measured range the ratio of
    the nearest end is used, so the cost scales with the proxy."""

    costs: Mapping[Signature, float]
    """Signature ``(batch_size, seq_len, tgt_len[, sum_sq_len])`` to measured cost (> 0)."""
    base: CostProxy = field(default_factory=AttentionCost)
    """Proxy along which costs are interpolated."""

    def __post_init__(self) -> None:
        if not self.costs:
            raise ConfigError("A PilotTable needs at least one measured signature. Got none.")
        for sig, cost in self.costs.items():
            if len(sig) not in (3, 4):
                raise ConfigError(f"PilotTable signature {sig!r} must be (batch_size, seq_len, "
                                  "tgt_len[, sum_sq_len]).")
            if not np.isfinite(cost) or cost <= 0:
                raise ConfigError(f"PilotTable cost of signature {sig!r} must be a finite number > 0. Got {cost!r}.")

    def __call__(self, schedule: IterationSchedule) -> FloatArray:
        packed = schedule.is_packed
        width = 4 if packed else 3
        if packed and any(len(k) < 4 for k in self.costs):
            raise InputError("The schedule is packed, so PilotTable signatures need sum_sq_len as a fourth entry.")
        measured = {tuple(int(v) for v in k[:width]): float(c) for k, c in self.costs.items()}
        table_sig = np.array(list(measured), dtype=np.int64).reshape(-1, width)
        cost = np.array(list(measured.values()), dtype=np.float64)
        rows = IterationSchedule.from_columns(dict(zip(SIGNATURE_FIELDS, table_sig.T, strict=False)),
                                              meta={"packed": packed})
        x = np.asarray(self.base(rows), dtype=np.float64)
        xs, inv = np.unique(x, return_inverse=True)
        inv = inv.reshape(-1)
        mean_ratio = np.bincount(inv, weights=cost / x) / np.bincount(inv)
        # Work on unique signatures: a run has millions of rows but few shapes.
        table = signature_table(schedule)
        target = np.asarray(self.base(table.as_schedule()), dtype=np.float64)
        per_sig = target * np.interp(target, xs, mean_ratio)
        for i, sig in enumerate(map(tuple, table.signatures.tolist())):
            if sig in measured:
                per_sig[i] = measured[sig]
        return per_sig[table.inverse]


@dataclass(frozen=True, kw_only=True)
class SignatureCosts(_PerSignature):
    """A cost for every signature of the run, computed elsewhere (the model proxy: the roofline
    time of the profiled model's exact FLOPs and bytes)."""

    costs: Mapping[Signature, float]
    """Signature ``(batch_size, seq_len, tgt_len[, sum_sq_len])`` to its cost (>= 0)."""
    name: str = "model"
    """What the costs are (for SEQPOINTS.json meta)."""
    components: Mapping[str, Mapping[Signature, float]] = field(default_factory=dict)
    """Exact costs per signature (``flops``, ``bytes``) that the SeqPoint selector adds to its
    basis components: its bound, and its calibrated weights, then cover their run totals."""

    def __call__(self, schedule: IterationSchedule) -> FloatArray:
        table = signature_table(schedule)
        return self._values(self.costs, table.signatures)[table.inverse]

    def component_values(self, signatures: IntArray) -> FloatArray:
        """Every one of :attr:`components` at ``signatures`` (m, width), shape ``(m, J)``."""
        return np.stack([self._values(c, signatures) for c in self.components.values()], axis=1)

    def _values(self, costs: Mapping[Signature, float], signatures: IntArray) -> FloatArray:
        sigs = list(map(tuple, signatures.tolist()))
        missing = [sig for sig in sigs if sig not in costs]
        if missing:
            raise InputError(f"The {self.name} cost proxy has no cost for signature {missing[0]!r}; "
                             "build it from the schedule it selects on.")
        return np.array([costs[sig] for sig in sigs], dtype=np.float64)


def cost_proxy(spec: str | CostProxy | PilotTable | None = None, *, owner: str = "cost_proxy") -> CostProxy:
    """The cost proxy ``spec`` names: a name in :data:`COST_MODELS` (None is ``attention``), or
    a callable ``f(schedule)`` or :class:`PilotTable` as it is; ``owner`` names the estimator
    that received it in the error."""
    if spec is None or isinstance(spec, str):
        return COST_MODELS.get("attention" if spec is None else spec)()
    if callable(spec):
        return spec
    raise ConfigError(f"The 'cost' parameter of {owner} must be a cost model name ({', '.join(COST_MODELS.names())}), "
                      f"a callable f(schedule) or a PilotTable. Got {spec!r}.")


def describe_cost(spec: str | CostProxy | PilotTable | None) -> str:
    """Short text naming a cost spec (for SEQPOINTS.json meta)."""
    if spec is None or isinstance(spec, str):
        return "attention" if spec is None else spec
    if isinstance(spec, PilotTable):
        base = f" along {describe_cost(spec.base)}" if not isinstance(spec.base, AttentionCost) else ""
        return f"pilot_table({len(spec.costs)} signatures{base})"
    if isinstance(spec, SignatureCosts):
        return spec.name
    return getattr(spec, "__qualname__", type(spec).__name__)


def evaluate_proxy(proxy: CostProxy, schedule: IterationSchedule, *, owner: str) -> FloatArray:
    """Call ``proxy`` and check it returned one finite non-negative value per iteration."""
    values = np.asarray(proxy(schedule), dtype=np.float64)
    if values.shape != (len(schedule),):
        raise InputError(f"The cost proxy of {owner} returned shape {values.shape}; "
                         f"it must return one value per iteration, shape ({len(schedule)},).")
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        bad = int(np.flatnonzero(~np.isfinite(values) | (values < 0))[0])
        raise InputError(f"The cost proxy of {owner} returned {float(values[bad])!r} for row "
                         f"{bad}; costs must be finite and >= 0.")
    return values


def signature_proxy(proxy: CostProxy, schedule: IterationSchedule, table: SignatureTable, *, owner: str) -> FloatArray:
    """Proxy value of every unique signature, shape ``(n_unique,)``: a ``per_signature`` proxy runs once per
    signature, any other on the whole schedule, averaged per signature."""
    if getattr(proxy, "per_signature", False):
        return evaluate_proxy(proxy, table.as_schedule(), owner=owner)
    full = evaluate_proxy(proxy, schedule, owner=owner)
    return np.bincount(table.inverse, weights=full, minlength=len(table)) / table.counts


def basis_components(schedule: IterationSchedule) -> tuple[tuple[str, ...], FloatArray]:
    """Elementary cost components every iteration's cost is (close to) a non-negative mix of: their
    names (``iteration``, ``sequences``, ``tokens``, ``quadratic``, ``steps``, and ``dense_quadratic``
    for a packed schedule) and values, shape ``(n_iterations, n_components)``."""
    b = schedule.batch_size.astype(np.float64)
    names: tuple[str, ...] = ("iteration", "sequences", "tokens", "quadratic", "steps")
    columns = [np.ones_like(b), b, schedule.padded_tokens.astype(np.float64), _quadratic(schedule),
               (schedule.seq_len + schedule.tgt_len).astype(np.float64)]
    if schedule.is_packed:
        # A varlen kernel pays the documents' Σ sᵢ² ("quadratic"), a dense one (SDPA with a
        # block-diagonal mask) the row's b·s²: both are components.
        s = schedule.seq_len.astype(np.float64)
        names += ("dense_quadratic",)
        columns.append(b * s * s)
    return names, np.stack(columns, axis=1)


def basis_error(weights: ArrayLike, components: ArrayLike, totals: ArrayLike) -> float:
    """Worst relative error of points of ``weights`` (k,) on the elementary cost components
    ``components`` (k, J; rows of :func:`basis_components`) whose run totals are ``totals`` (J,; > 0):
    ``max_j |Σ_i weights_i · components_ij − totals_j| / totals_j`` (a fraction; 0 without components),
    the SeqPoint selector's ``estimated_error_``, which bounds any non-negative combination of them."""
    t = np.asarray(totals, dtype=np.float64)
    projected = np.asarray(weights, dtype=np.float64) @ np.asarray(components, dtype=np.float64)
    return float(np.max(np.abs(projected - t) / t)) if t.size else 0.0


def weighted_projection(cost: ArrayLike, points: ArrayLike | None, weights: ArrayLike) -> float:
    """The SeqPoint paper's projection of the run total, ``Σ_i weights_i × cost[points_i]``:
    ``cost`` of every iteration (n_iterations,) and ``points`` (k,) the rows of the points, or
    ``cost`` of every point (k,) and ``points`` None."""
    values = np.asarray(cost, dtype=np.float64)
    values = values if points is None else values[np.asarray(points, dtype=np.int64)]
    return float(np.dot(np.asarray(weights, dtype=np.float64), values))
