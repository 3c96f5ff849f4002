"""Exact deterministic totals of a whole run: FLOPs, bytes, operators and roofline times
summed over every iteration, not projected from SeqPoints. Two ways, chosen by what verifies:

* **count**: every unique signature counted on the meta device (~30-90 ms each on a CPU).
* **fit**: every operator's FLOPs and bytes (and every memoized block's cost) fitted as a
  polynomial of degree <= 3 in the batch tensors' dimensions from a few counted signatures;
  used only when it reproduces held-out counted signatures to the integer (blocks to a
  relative 1e-9). DeepSpeech2's strided convolution rounds the length: it fails the check
  and is counted in full; BERT and GNMT verify exactly.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import ConfigError
from seqpoint.profiling._counting import Cost, count_step, roofline_peaks
from seqpoint.profiling._state import meta_clone
from seqpoint.workloads import BatchShape, TorchWorkload, Workload

__all__ = ["ExactTotals", "exact_signature_costs", "exact_totals"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Method = Literal["auto", "count", "fit"]
Devices = Mapping[str, tuple[float, float]]

#: Held-out signatures the fit must reproduce exactly.
N_CHECK = 8
#: Relative tolerance on fitted non-integer values (roofline seconds of memoized blocks).
BLOCK_RTOL = 1e-9
#: Fewest signatures worth a fit (a fit counts about 2·(basis size) + N_CHECK of them).
MIN_FIT = 120
#: Signatures evaluated together (bounds memory: ops × signatures values per metric).
CHUNK = 512


class Run(Protocol):
    """What :func:`exact_totals` reads of an ``IterationSchedule`` (a package profiling may not import)."""

    def unique_signatures(self) -> tuple[IntArray, IntArray, IntArray]: ...


@dataclass
class ExactTotals:
    """Exact deterministic metrics of every unique signature of a run, and their totals."""

    totals: dict[str, float]
    """Metric (``flops``, ``bytes``, ``ops``, ``roofline_<device>_s``, ``flops_<category>``...)
    to its sum over every iteration."""
    per_signature: dict[str, FloatArray]
    """Metric to its value for every unique signature, shape ``(n_signatures,)``."""
    signatures: IntArray
    """Unique signatures, shape ``(n_signatures, width)``."""
    inverse: IntArray
    """Row of every iteration's signature in :attr:`signatures`, shape ``(n_iterations,)``."""
    method: str
    """``count`` (every signature counted), ``fit`` (verified per-operator polynomial), or
    ``count+fit`` (some regimes of the run fitted, others counted)."""
    counted: int
    """Signatures counted on the meta device."""
    seconds: float
    """Wall time spent."""
    note: str = ""
    """Why the fit was not used, when it was tried and failed."""
    checked: int = 0
    """Held-out signatures the fit reproduced exactly (0 when counted)."""
    max_residual: float = 0.0
    """Largest relative residual of the fit on the held-out signatures."""
    devices: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Extra roofline devices, name to ``(peak FLOP/s, bytes/s)``."""

    def per_iteration(self, metric: str) -> FloatArray:
        """``metric`` of every iteration, shape ``(n_iterations,)``."""
        return self.per_signature[metric][self.inverse]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (totals and how they were obtained; not the per-signature arrays)."""
        return {"totals": dict(self.totals), "method": self.method, "counted": self.counted,
                "n_signatures": int(self.signatures.shape[0]), "checked": self.checked,
                "max_residual": self.max_residual, "seconds": self.seconds, "note": self.note}


def _row_values(cost: Cost, is_op: bool) -> dict[str, float]:
    """What is fitted of one trace row: roofline only for blocks (ops recompute it)."""
    return {k: v for k, v in cost.metrics().items() if not (is_op and k.startswith("roofline_"))}


def _features(workload: Workload, sigs: IntArray) -> FloatArray | None:
    """Every dimension of every batch tensor, per signature (None when the layout varies)."""
    import torch
    from torch.utils._pytree import tree_leaves

    clone = meta_clone(workload) if isinstance(workload, TorchWorkload) else None
    source: Workload = workload if clone is None else clone  # its own batches have the same dimensions
    rows: list[list[int]] = []
    for sig in sigs.tolist():
        batch = source.make_batch(tuple(int(v) for v in sig))
        rows.append([int(d) for t in tree_leaves(batch) if isinstance(t, torch.Tensor) for d in t.shape])
        if len(rows[-1]) != len(rows[0]):
            return None
    f = np.asarray(rows, dtype=np.float64)
    # Constant and repeated dimensions add nothing to the basis.
    keep = [j for j in range(f.shape[1]) if np.ptp(f[:, j]) > 0]
    _, first = np.unique(f[:, keep].T, axis=0, return_index=True)
    return f[:, [keep[j] for j in sorted(first)]]


def _monomials(n_features: int, degree: int = 3) -> list[tuple[int, ...]]:
    """Every product of at most ``degree`` features (the empty one first: the constant)."""
    return [m for d in range(degree + 1) for m in itertools.combinations_with_replacement(range(n_features), d)]


def _design(feat: FloatArray, monos: Sequence[tuple[int, ...]], scale: FloatArray) -> FloatArray:
    x = feat / scale
    return np.stack([np.prod(x[:, list(m)], axis=1) if m else np.ones(len(x)) for m in monos], axis=1)


def _spread(sigs: IntArray, feat: FloatArray, n: int, rng: np.random.Generator) -> IntArray:
    """``n`` rows spread over the signatures: the extremes of every feature, then random."""
    chosen: list[int] = []
    for j in range(feat.shape[1]):
        chosen += [int(np.argmin(feat[:, j])), int(np.argmax(feat[:, j]))]
    rest = np.setdiff1d(np.arange(len(sigs)), chosen)
    chosen += rng.choice(rest, size=min(len(rest), max(0, n - len(set(chosen)))), replace=False).tolist()
    return np.unique(np.asarray(chosen, dtype=np.int64))


def _count(workload: Workload, sig: Sequence[int], devices: Devices,
           trace: list[tuple[str, Cost, bool]] | None = None, shape: BatchShape | None = None) -> Cost:
    return count_step(workload, tuple(int(v) for v in sig), devices=devices, trace=trace, shape=shape)


def _count_all(workload: Workload, sigs: IntArray, devices: Devices,
               tick: Callable[[], None], shapes: Sequence[BatchShape | None] | None = None) -> dict[str, FloatArray]:
    rows = []
    for i, sig in enumerate(sigs):
        rows.append(_count(workload, sig, devices, shape=None if shapes is None else shapes[i]).metrics())
        tick()
    names = sorted({k for r in rows for k in r})
    return {k: np.array([r.get(k, 0.0) for r in rows]) for k in names}


class _FitFailed(Exception):
    """The per-operator fit does not reproduce a held-out signature (message says why)."""


def _fit(workload: Workload, sigs: IntArray, feat: FloatArray, devices: Devices, peaks: Devices,
         seed: int, shapes: Sequence[BatchShape | None] | None = None) -> tuple[dict[str, FloatArray], int, float, int]:
    """Per-signature metrics from the verified fit; raises :class:`_FitFailed`."""
    # Features constant within this regime add nothing.
    feat = feat[:, np.ptp(feat, axis=0) > 0]
    monos = _monomials(feat.shape[1])
    rng = np.random.default_rng(seed)
    fit_rows = _spread(sigs, feat, 2 * len(monos), rng)
    rest = np.setdiff1d(np.arange(len(sigs)), fit_rows)
    check_rows = rng.choice(rest, size=min(N_CHECK, len(rest)), replace=False)
    if len(fit_rows) < len(monos) + 2 or len(check_rows) < 2:
        raise _FitFailed("too few signatures to fit and check")
    traces: list[list[tuple[str, Cost, bool]]] = []
    for r in (*fit_rows.tolist(), *check_rows.tolist()):
        tr: list[tuple[str, Cost, bool]] = []
        _count(workload, sigs[r], devices, tr, shape=None if shapes is None else shapes[r])
        traces.append(tr)
    labels = [(lbl, is_op) for lbl, _, is_op in traces[0]]
    if any([(lbl, o) for lbl, _, o in t] != labels for t in traces):
        raise _FitFailed("the operators run differ between signatures")
    cols = sorted({(i, k) for t in traces for i, (_, c, o) in enumerate(t) for k in _row_values(c, o)})
    y = np.array([[_row_values(t[i][1], t[i][2]).get(k, 0.0) for i, k in cols] for t in traces])
    scale = np.maximum(feat.max(axis=0), 1.0)
    d = _design(feat, monos, scale)
    n_fit = len(fit_rows)
    coef, *_ = np.linalg.lstsq(d[fit_rows], y[:n_fit], rcond=None)
    coef += np.linalg.lstsq(d[fit_rows], y[:n_fit] - d[fit_rows] @ coef, rcond=None)[0]
    integer = np.array([not k.startswith("roofline_") for _, k in cols])
    pred = d[np.concatenate([fit_rows, check_rows])] @ coef
    pred[:, integer] = np.round(pred[:, integer])
    err = np.abs(pred - y) / np.maximum(np.abs(y), 1.0)
    if np.any(err[:, integer] > 0) or np.any(err[:, ~integer] > BLOCK_RTOL):
        worst = cols[int(np.argmax(err.max(axis=0)))]
        raise _FitFailed(f"operator {labels[worst[0]][0]!r} ({worst[1]}) is not a polynomial "
                         f"of the batch dimensions (relative residual {float(err.max()):.2e})")
    residual = float(err[n_fit:].max())
    return _evaluate(d, coef, cols, labels, integer, peaks), n_fit + len(check_rows), residual, len(check_rows)


def _evaluate(d: FloatArray, coef: FloatArray, cols: list[tuple[int, str]],
              labels: list[tuple[str, bool]], integer: NDArray[np.bool_],
              peaks: Devices) -> dict[str, FloatArray]:
    names = sorted({k for _, k in cols} | {f"roofline_{g}_s" for g in peaks})
    out = {k: np.zeros(d.shape[0]) for k in names}
    col_of = {c: j for j, c in enumerate(cols)}
    is_op = np.array([o for _, o in labels])
    op_idx = np.flatnonzero(is_op).tolist()
    f_cols = [col_of.get((i, "flops")) for i in op_idx]
    b_cols = [col_of.get((i, "bytes")) for i in op_idx]
    for lo in range(0, d.shape[0], CHUNK):
        vals = d[lo:lo + CHUNK] @ coef
        vals[:, integer] = np.round(vals[:, integer])
        for j, (_, k) in enumerate(cols):
            out[k][lo:lo + CHUNK] += vals[:, j]
        zero = np.zeros(len(vals))
        fl = np.stack([vals[:, j] if j is not None else zero for j in f_cols], axis=1)
        by = np.stack([vals[:, j] if j is not None else zero for j in b_cols], axis=1)
        for g, (pf, bw) in peaks.items():
            # The fitted block rows already added their own roofline above.
            out[f"roofline_{g}_s"][lo:lo + CHUNK] += np.maximum(fl / pf, by / bw).sum(axis=1)
    return out


def exact_signature_costs(
    workload: Workload, signatures: IntArray, *, method: Method = "auto",
    devices: Devices | None = None, seed: int = 0, progress: Callable[[], None] | None = None,
    shapes: Sequence[BatchShape | None] | None = None,
) -> tuple[dict[str, FloatArray], str, int, str, int, float]:
    """Exact metrics of every row of ``signatures`` (arguments as for :func:`exact_totals`):
    ``(per-signature metrics, method used, signatures counted, note, checked, max residual)``."""
    if method not in ("auto", "count", "fit"):
        raise ConfigError(f"The 'method' parameter of exact_totals must be 'auto', 'count' or 'fit'. Got {method!r}.")
    devs = dict(devices or {})
    peaks = roofline_peaks(workload, devs)
    tick = progress or (lambda: None)
    if method == "count" or not isinstance(workload, TorchWorkload) or len(signatures) <= MIN_FIT:
        if method == "fit":
            raise ConfigError("exact_totals(method='fit') needs a reference (torch) workload and "
                              f"more than {MIN_FIT} unique signatures; use method='count'.")
        return _count_all(workload, signatures, devs, tick, shapes), "count", len(signatures), "", 0, 0.0
    feat = _features(workload, signatures)
    if feat is None:
        if method == "fit":
            raise ConfigError("exact_totals(method='fit'): the batch's tensors differ in number or "
                              "rank between signatures; use method='count'.")
        return (_count_all(workload, signatures, devs, tick, shapes), "count", len(signatures),
                "fit not used: the batch's tensors differ between signatures", 0, 0.0)
    # A dimension of 0 or 1 changes which operators run (a reshape becomes a view, a
    # gather of nothing is skipped): each such regime is fitted, or counted, on its own.
    regime = np.sign(feat - 1.0).astype(np.int64)
    keys, which = np.unique(regime, axis=0, return_inverse=True)
    out: dict[str, FloatArray] = {}
    counted, checked, residual, used, notes = 0, 0, 0.0, set(), []
    for g in range(len(keys)):
        rows = np.flatnonzero(which.reshape(-1) == g)
        part: dict[str, FloatArray] | None = None
        part_shapes = None if shapes is None else [shapes[int(r)] for r in rows]
        if len(rows) > MIN_FIT:
            try:
                part, n, res, chk = _fit(workload, signatures[rows], feat[rows], devs, peaks, seed, part_shapes)
                counted, checked, residual = counted + n, checked + chk, max(residual, res)
                used.add("fit")
            except _FitFailed as exc:
                if method == "fit":
                    raise ConfigError(f"exact_totals(method='fit'): {exc}; use method='count'.") from None
                notes.append(f"fit not used: {exc}")
        if part is None:
            part = _count_all(workload, signatures[rows], devs, tick, part_shapes)
            counted += len(rows)
            used.add("count")
        for k, v in part.items():
            out.setdefault(k, np.zeros(len(signatures)))[rows] = v
    return out, "+".join(sorted(used)), counted, "; ".join(notes), checked, residual


def exact_totals(
    workload: Workload, schedule: Run, *, method: Method = "auto",
    devices: Devices | None = None, seed: int = 0, progress: Callable[[], None] | None = None,
    shapes: Sequence[BatchShape | None] | None = None,
) -> ExactTotals:
    """Exact FLOPs, bytes, operators and roofline times of every iteration of ``schedule``.

    Parameters
    ----------
    workload : Workload
        The model whose training step is counted (a reference workload on the meta
        device; a user workload on real steps).
    schedule : IterationSchedule
        The whole run.
    method : {"auto", "count", "fit"}
        ``count`` every unique signature; ``fit`` a per-operator polynomial in the batch
        dimensions, verified exactly on held-out signatures (an error when it does not
        verify); ``auto`` tries the fit on runs with over 120 unique signatures and
        counts when it does not verify.
    devices : mapping of str to (float, float), optional
        Extra roofline devices, name to ``(peak FLOP/s, bytes/s)``, beside ``GPU_SPECS``.
    seed : int
        Seed of the choice of fitted and held-out signatures.
    progress : callable, optional
        Called once per counted signature (a progress bar's advance).
    shapes : sequence of BatchShape, optional
        For a workload that takes real lengths: one batch per unique signature (in
        ``schedule.unique_signatures()`` order), counted as the step runs it; exact when the
        cost depends on the lengths through the signature only (not for a kernel that
        skips each row's padding).

    Returns
    -------
    ExactTotals
        Totals over every iteration (sums of per-signature values times their counts).
    """
    t0 = time.perf_counter()
    sigs, counts, inverse = schedule.unique_signatures()
    sigs = np.asarray(sigs, dtype=np.int64)
    per_sig, used, counted, note, checked, residual = exact_signature_costs(
        workload, sigs, method=method, devices=devices, seed=seed, progress=progress, shapes=shapes)
    weights = np.asarray(counts, dtype=np.float64)
    totals = {k: float(weights @ v) for k, v in per_sig.items()}
    return ExactTotals(totals=totals, per_signature=per_sig, signatures=sigs,
                       inverse=np.asarray(inverse, dtype=np.int64), method=used, counted=counted,
                       seconds=time.perf_counter() - t0, note=note, checked=checked,
                       max_residual=residual, devices=dict(devices or {}))
