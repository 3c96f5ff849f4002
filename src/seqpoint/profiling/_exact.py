"""Exact deterministic totals of a whole run: FLOPs, bytes, operators and roofline times
summed over every iteration, not projected from SeqPoints. Two ways, chosen by what verifies:

* **count**: every unique signature counted on the meta device (~30-90 ms each on a CPU).
* **fit**: every operator's FLOPs and bytes fitted as a polynomial in the batch tensors' dimensions
  from a few counted signatures, roofline times computed from them (see
  :mod:`seqpoint.profiling._fit`). Used only when the counts reproduce the counted signatures
  exactly (held-out ones included); otherwise the signatures are counted, and the note says why.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from seqpoint._signature import FloatArray, IntArray
from seqpoint.devices import Target
from seqpoint.exceptions import ConfigError
from seqpoint.profiling._basis import features
from seqpoint.profiling._counting import count_step, roofline_targets
from seqpoint.profiling._fit import Devices, FitFailed, Traced, fit
from seqpoint.profiling._state import WorkloadState
from seqpoint.workloads import BatchShape, TorchWorkload, Workload

__all__ = ["ExactTotals", "exact_signature_costs", "exact_totals"]

Method = Literal["auto", "count", "fit"]

#: Fewest signatures worth a fit (a fit counts about 2·(basis size) + N_CHECK of them).
MIN_FIT = 120


class Run(Protocol):
    """What :func:`exact_totals` reads of an ``IterationSchedule`` (a package profiling may not import)."""

    def unique_signatures(self) -> tuple[IntArray, IntArray, IntArray]: ...


@dataclass
class ExactTotals:
    """Exact deterministic metrics of every unique signature of a run, and their totals.

    ``totals``: metric (``flops``, ``bytes``, ``ops``, ``roofline_<device>_s``, ``flops_<category>``
    ...) to its sum over every iteration; ``per_signature``: metric to its value for every unique
    signature of ``signatures``, shape ``(n_signatures, width)``; ``inverse``: every iteration's row
    in it, shape ``(n_iterations,)``; ``method``: ``count`` (every signature counted), ``fit``
    (verified per-operator polynomial) or ``count+fit`` (some regimes fitted, others counted);
    ``counted``: signatures counted on the meta device; ``seconds``: wall time spent; ``note``: why
    the fit was not used, when it failed, and the lengths it read from the model (a transcript's, a
    strided convolution's output); ``checked``: held-out signatures the fit reproduced exactly (0
    when counted), ``max_residual`` its largest relative residual on them; ``devices``: extra
    roofline devices, by name.
    """

    totals: dict[str, float]
    per_signature: dict[str, FloatArray]
    signatures: IntArray
    inverse: IntArray
    method: str
    counted: int
    seconds: float
    note: str = ""
    checked: int = 0
    max_residual: float = 0.0
    devices: dict[str, Target] = field(default_factory=dict)

    def per_iteration(self, metric: str) -> FloatArray:
        """``metric`` of every iteration, shape ``(n_iterations,)``."""
        return self.per_signature[metric][self.inverse]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (totals and how they were obtained; not the per-signature arrays)."""
        return {"totals": dict(self.totals), "method": self.method, "counted": self.counted,
                "n_signatures": int(self.signatures.shape[0]), "checked": self.checked,
                "max_residual": self.max_residual, "seconds": self.seconds, "note": self.note}


def _count_all(workload: Workload, sigs: IntArray, devices: Devices, tick: Callable[[], None],
               shapes: Sequence[BatchShape | None] | None, state: WorkloadState,
               known: Mapping[int, dict[str, float]] | None = None) -> dict[str, FloatArray]:
    """Metrics of every signature, counted (or taken from ``known``, by row)."""
    rows, known = [], known or {}
    for i, sig in enumerate(sigs):
        rows.append(known[i] if i in known else count_step(
            workload, tuple(int(v) for v in sig), devices=devices, shape=None if shapes is None else shapes[i],
            state=state).metrics())
        tick()
    names = sorted({k for r in rows for k in r})
    return {k: np.array([r.get(k, 0.0) for r in rows]) for k in names}


def exact_signature_costs(
    workload: Workload, signatures: IntArray, *, method: Method = "auto",
    devices: Devices | None = None, seed: int = 0, progress: Callable[[], None] | None = None,
    shapes: Sequence[BatchShape | None] | None = None, state: WorkloadState | None = None,
) -> tuple[dict[str, FloatArray], str, int, str, int, float]:
    """Exact metrics of every row of ``signatures`` (arguments as for :func:`exact_totals`):
    ``(per-signature metrics, method used, signatures counted, note, checked, max residual)``, kept
    in ``state`` for the next call (not those of real batches, ``shapes``)."""
    state = state if state is not None else WorkloadState()
    sigs = np.asarray(signatures)
    key = (sigs.dtype.str, sigs.shape, sigs.tobytes(), method, tuple(sorted((devices or {}).items())), seed)
    if shapes is None and key in state.exact_costs:
        per_sig, *rest = state.exact_costs[key]
        return ({k: v.copy() for k, v in per_sig.items()}, *rest)
    result = _signature_costs(workload, signatures, method, devices, seed, progress, shapes, state)
    if shapes is None:
        state.exact_costs[key] = result
    return result


def _signature_costs(
    workload: Workload, signatures: IntArray, method: Method, devices: Devices | None, seed: int,
    progress: Callable[[], None] | None, shapes: Sequence[BatchShape | None] | None, state: WorkloadState,
) -> tuple[dict[str, FloatArray], str, int, str, int, float]:
    if method not in ("auto", "count", "fit"):
        raise ConfigError(f"The 'method' parameter of exact_totals must be 'auto', 'count' or 'fit'. Got {method!r}.")
    devs = dict(devices or {})
    peaks = roofline_targets(workload, devs)
    tick = progress or (lambda: None)
    if method == "count" or not isinstance(workload, TorchWorkload) or len(signatures) <= MIN_FIT:
        if method == "fit":
            raise ConfigError("exact_totals(method='fit') needs a reference (torch) workload and "
                              f"more than {MIN_FIT} unique signatures; use method='count'.")
        return _count_all(workload, signatures, devs, tick, shapes, state), "count", len(signatures), "", 0, 0.0
    described = features(workload, signatures, seed, state)
    if described is None:
        if method == "fit":
            raise ConfigError("exact_totals(method='fit'): the batch's tensors differ in number or "
                              "rank between signatures; use method='count'.")
        return (_count_all(workload, signatures, devs, tick, shapes, state), "count", len(signatures),
                "fit not used: the batch's tensors differ between signatures", 0, 0.0)
    # A dimension of 0 or 1 changes which operators run (a reshape becomes a view, a
    # gather of nothing is skipped): each such regime is fitted, or counted, on its own.
    feat, names = described
    regime = np.sign(feat - 1.0).astype(np.int64)
    keys, which = np.unique(regime, axis=0, return_inverse=True)
    out: dict[str, FloatArray] = {}
    counted, checked, residual, used, notes = 0, 0, 0.0, set(), []
    for g in range(len(keys)):
        rows = np.flatnonzero(which.reshape(-1) == g)
        part: dict[str, FloatArray] | None = None
        part_shapes = None if shapes is None else [shapes[int(r)] for r in rows]
        traced = Traced(workload, signatures[rows], devs, part_shapes, state)
        try:
            # A regime too small to be worth a fit is counted (None).
            if (fitted := fit(traced, feat[rows], names, peaks, seed)) is not None:
                part, n, res, chk, why = fitted
                counted, checked, residual = counted + n, checked + chk, max(residual, res)
                used.add("fit")
                if why:
                    notes.append(f"fit: {why}")
        except FitFailed as exc:
            if method == "fit":
                raise ConfigError(f"exact_totals(method='fit'): {exc}; use method='count'.") from None
            notes.append(f"fit not used: {exc}")
        if part is None:
            # The signatures the failed fit counted are not counted again.
            part = _count_all(workload, signatures[rows], devs, tick, part_shapes, state, traced.metrics)
            counted += len(rows)
            used.add("count")
        for k, v in part.items():
            out.setdefault(k, np.zeros(len(signatures)))[rows] = v
    return out, "+".join(sorted(used)), counted, "; ".join(dict.fromkeys(notes)), checked, residual


def exact_totals(
    workload: Workload, schedule: Run, *, method: Method = "auto",
    devices: Devices | None = None, seed: int = 0, progress: Callable[[], None] | None = None,
    shapes: Sequence[BatchShape | None] | None = None, state: WorkloadState | None = None,
) -> ExactTotals:
    """Exact FLOPs, bytes, operators and roofline times of every iteration of ``schedule`` (the
    whole run), counted on ``workload``'s step (a reference workload on the meta device, a user
    workload on real steps): per-signature values times their counts.

    ``method``: ``count`` or ``fit`` (this module's docstring; an error when the fit does not
    verify); ``auto`` tries the fit on runs with over 120 unique signatures and counts when it does
    not verify. ``devices``: extra roofline devices by name (``device_targets``), beside
    ``GPU_SPECS``; ``seed``: the choice of fitted and held-out signatures; ``progress``: called
    once per counted signature. ``shapes``, for a workload that takes real lengths: one batch per
    unique signature (in ``schedule.unique_signatures()`` order), counted as the step runs it;
    exact when the cost depends on the lengths through the signature only (not for a kernel that
    skips each row's padding). ``state`` (a :class:`~seqpoint.profiling.Profiler`'s) keeps counts
    between calls: the selection's and the run's totals count the same signatures once.
    """
    t0 = time.perf_counter()
    sigs, counts, inverse = schedule.unique_signatures()
    sigs = np.asarray(sigs, dtype=np.int64)
    per_sig, used, counted, note, checked, residual = exact_signature_costs(
        workload, sigs, method=method, devices=devices, seed=seed, progress=progress, shapes=shapes, state=state)
    weights = np.asarray(counts, dtype=np.float64)
    totals = {k: float(weights @ v) for k, v in per_sig.items()}
    return ExactTotals(totals=totals, per_signature=per_sig, signatures=sigs,
                       inverse=np.asarray(inverse, dtype=np.int64), method=used, counted=counted,
                       seconds=time.perf_counter() - t0, note=note, checked=checked,
                       max_residual=residual, devices=dict(devices or {}))
