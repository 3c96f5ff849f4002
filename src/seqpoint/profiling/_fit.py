"""The per-operator polynomial fit behind exact run totals (:mod:`seqpoint.profiling._exact`).

Every operator's FLOPs and bytes (and every memoized block's, with its step count) are
fitted as a polynomial of degree <= 3 in the batch tensors' dimensions from a few counted
signatures, and the roofline time is computed from the fitted counts, operator by operator,
as the counter does: the time is not a polynomial (an RNN step turns from memory- to
compute-bound with the batch), the counts are. A length the model rounds (a strided
convolution's output) is read from the counted operators' dimensions as
``floor((x + c) / m)`` of a batch dimension and enters the basis as ``(x + c) mod m``.

A fit is exact or not used: its counts must round to the counted integers, and every metric,
roofline times included, come within ``EXACT_RTOL`` of counting, on every counted signature
(``N_CHECK`` held-out ones included); otherwise :class:`FitFailed` says why.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from seqpoint._signature import FloatArray, IntArray
from seqpoint.devices import Target
from seqpoint.profiling._basis import Length, floor_forms
from seqpoint.profiling._counting import TraceRow, count_step
from seqpoint.profiling._state import WorkloadState
from seqpoint.workloads import BatchShape, Workload

__all__ = ["Devices", "FitFailed", "Traced", "fit"]

#: An operator's roofline term: its FLOPs and bytes columns and its precision.
_Term = tuple[int, int, str | None]
Devices = Mapping[str, Target]

#: Held-out signatures the fit must reproduce exactly.
N_CHECK = 8
#: Relative tolerance on fitted non-integer values (roofline seconds of memoized blocks).
BLOCK_RTOL = 1e-9
#: Largest relative difference, on any metric, between the fit and counting of a counted
#: signature (the sums run in another order; an exact fit differs by ~1e-15).
EXACT_RTOL = 1e-11
#: Fitted columns that are not metrics: a block's scale and its operators' counts.
_SCALE, _PART = "scale", "part"
#: Signatures evaluated together (bounds memory: ops × signatures values per metric).
CHUNK = 512


def _row_values(row: TraceRow) -> dict[str, float]:
    """What is fitted of one trace row: an operator's roofline follows from its FLOPs and
    bytes, and so does a block's whose operators are known (from theirs)."""
    drop = row.is_op or row.parts is not None
    out = {k: v for k, v in row.cost.metrics().items() if not (drop and k.startswith("roofline_"))}
    if row.parts is not None:
        out[_SCALE] = row.scale
        for p, (_, f, b, _) in enumerate(row.parts):
            out[f"{_PART}{p}.flops"], out[f"{_PART}{p}.bytes"] = f, b
    return out


def _monomials(basis: FloatArray, degree: int = 3) -> list[tuple[int, ...]]:
    """Every product of at most ``degree`` features (the empty one first: the constant), a
    feature with ``v`` distinct values to a power below ``v`` (the others add nothing)."""
    top = [len(np.unique(basis[:, j])) - 1 for j in range(basis.shape[1])]
    return [m for d in range(degree + 1) for m in itertools.combinations_with_replacement(range(len(top)), d)
            if all(m.count(j) <= top[j] for j in m)]


def _n_fit(monos: Sequence[tuple[int, ...]]) -> int:
    """Signatures a fit counts: half as many again as coefficients (what the exact rounding
    of every fitted row checks), beside the held-out ones."""
    return len(monos) + max(N_CHECK, len(monos) // 2)


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


class FitFailed(Exception):
    """The per-operator fit does not reproduce a held-out signature (message says why)."""


@dataclass
class Traced:
    """The signatures of one regime counted with their traces, by row."""

    workload: Workload
    sigs: IntArray
    devices: Devices
    shapes: Sequence[BatchShape | None] | None
    state: WorkloadState
    traces: dict[int, list[TraceRow]] = field(default_factory=dict)
    metrics: dict[int, dict[str, float]] = field(default_factory=dict)

    def count(self, rows: Sequence[int]) -> None:
        for r in rows:
            if r not in self.traces:
                tr: list[TraceRow] = []
                cost = count_step(self.workload, tuple(int(v) for v in self.sigs[r]), devices=self.devices, trace=tr,
                                  shape=None if self.shapes is None else self.shapes[r], state=self.state)
                self.traces[r], self.metrics[r] = tr, cost.metrics()

    def dims(self, rows: Sequence[int]) -> IntArray | None:
        """Every traced dimension, shape ``(len(rows), n_dims)`` (None when they differ in number)."""
        flat = [[d for row in self.traces[r] for d in row.dims] for r in rows]
        return np.asarray(flat, dtype=np.int64) if len({len(f) for f in flat}) == 1 else None


def _lengths(traced: Traced, rows: list[int], raw: IntArray) -> list[Length]:
    """Lengths the model rounds from the batch dimensions (a strided convolution's output),
    read from the counted operators' dimensions. Forms that agree on the counted rows but
    not on every signature are told apart by counting a signature where they differ."""
    counted = list(rows)
    dims = traced.dims(counted)
    if dims is None:
        return []
    _, first = np.unique(dims.T, axis=0, return_index=True)
    found: list[Length] = []
    for col in sorted(first.tolist()):
        v = dims[:, col]
        forms = [f for j in range(raw.shape[1]) for f in floor_forms(j, raw[counted, j], v)]
        if not forms or any(f.m == 1 for f in forms):
            continue  # not a rounded length, or an affine one (the basis has it)
        while True:
            values = np.stack([f.values(raw) for f in forms])
            differ = np.flatnonzero(np.ptp(values, axis=0) > 0)
            if len(differ) == 0:
                break
            r = int(differ[0])
            traced.count([r])
            rows.append(r)
            new = traced.dims([r])
            if new is None or new.shape[1] != dims.shape[1]:
                raise FitFailed("the operators' dimensions differ between signatures")
            forms = [f for f, val in zip(forms, values[:, r], strict=True) if val == new[0, col]]
            if not forms:
                raise FitFailed(f"a length inside the model (dimension {col} of the traced operators) "
                                 "is not a rounded affine function of one batch dimension")
        found.append(forms[0])
    return found


def fit(traced: Traced, feat: FloatArray, names: Sequence[str], peaks: Devices, seed: int,
        ) -> tuple[dict[str, FloatArray], int, float, int, str] | None:
    """Per-signature metrics from the verified fit, signatures counted, the largest relative
    residual on held-out signatures, their number, and a note; None when counting every
    signature costs less; raises :class:`FitFailed` (what was counted stays in ``traced``)."""
    sigs = traced.sigs
    # Features constant within this regime add nothing.
    varying = np.ptp(feat, axis=0) > 0
    feat, names = feat[:, varying], [n for n, v in zip(names, varying, strict=True) if v]
    raw = feat.astype(np.int64)
    basis, notes = _decorrelate(raw, names)
    monos = _monomials(basis)
    if _n_fit(monos) + N_CHECK >= len(sigs):
        return None
    rng = np.random.default_rng(seed)
    fit_rows = _spread(sigs, basis, _n_fit(monos), rng).tolist()
    rest = np.setdiff1d(np.arange(len(sigs)), fit_rows)
    check_rows = rng.choice(rest, size=min(N_CHECK, len(rest)), replace=False).tolist()
    if len(fit_rows) < len(monos) + 2 or len(check_rows) < 2:
        raise FitFailed("too few signatures to fit and check")
    traced.count([*fit_rows, *check_rows])
    seen = [*fit_rows, *check_rows]
    lengths = _lengths(traced, seen, raw) if raw.shape[1] else []
    check_rows += seen[len(fit_rows) + len(check_rows):]
    if lengths:
        for ln in lengths:
            if np.ptp(np.sign(ln.values(raw) - 1)) > 0:
                raise FitFailed(f"the length {ln.describe(names)} inside the model reaches 0 or 1 on "
                                 "some signatures (other operators run)")
        basis = np.hstack([basis, np.stack([ln.residue(raw) for ln in lengths], axis=1)])
        _, keep = np.unique(basis.T, axis=0, return_index=True)
        basis = basis[:, sorted(k for k in keep.tolist() if np.ptp(basis[:, k]) > 0)]
        notes.append("lengths inside the model: " + ", ".join(sorted({ln.describe(names) for ln in lengths})))
        monos = _monomials(basis)
        free = np.setdiff1d(np.arange(len(sigs)), list(traced.traces))
        more = _n_fit(monos) - len(fit_rows)
        if more > 0:
            fit_rows += rng.choice(free, size=min(len(free), more), replace=False).tolist()
        if len(fit_rows) < len(monos) + 2:
            raise FitFailed("too few signatures to fit and check")
        traced.count(fit_rows)
    order = [*fit_rows, *check_rows]
    traces = [traced.traces[r] for r in order]
    labels = [(row.label, row.is_op, None if row.parts is None else len(row.parts)) for row in traces[0]]
    if any([(row.label, row.is_op, None if row.parts is None else len(row.parts)) for row in t] != labels
           for t in traces):
        raise FitFailed("the operators run differ between signatures")
    values = [[_row_values(row) for row in t] for t in traces]
    cols = sorted({(i, k) for v in values for i, row in enumerate(v) for k in row})
    y = np.array([[v[i].get(k, 0.0) for i, k in cols] for v in values])
    integer = np.array([not k.startswith("roofline_") for _, k in cols])
    # Columns equal on every counted signature have equal fits: each is fitted once.
    uniq, first, of_col = np.unique(np.vstack([y, integer]), axis=1, return_index=True, return_inverse=True)
    yu, int_u, of_col = uniq[:-1], integer[first], of_col.reshape(-1)
    scale = np.maximum(basis.max(axis=0), 1.0)
    d = _design(basis, monos, scale)
    n_fit = len(fit_rows)
    coef, *_ = np.linalg.lstsq(d[fit_rows], yu[:n_fit], rcond=None)
    coef += np.linalg.lstsq(d[fit_rows], yu[:n_fit] - d[fit_rows] @ coef, rcond=None)[0]
    pred = d[order] @ coef
    pred[:, int_u] = np.round(pred[:, int_u])
    err = np.abs(pred - yu) / np.maximum(np.abs(yu), 1.0)
    if np.any(err[:, int_u] > 0) or np.any(err[:, ~int_u] > BLOCK_RTOL):
        worst = cols[int(np.flatnonzero(of_col == int(np.argmax(err.max(axis=0))))[0])]
        what = worst[1] if not worst[1].startswith((_PART, _SCALE)) else f"its operators' {worst[1]}"
        raise FitFailed(f"operator {labels[worst[0]][0]!r} ({what}) is not a polynomial "
                         f"of the batch dimensions (relative residual {float(err.max()):.2e})")
    model = _Model.build(coef, int_u, cols, of_col, traces[0], peaks)
    # The whole of every counted signature, roofline times included, as the counter has it.
    got = model.evaluate(d[order])
    rel = np.zeros(len(order))
    for k in got.keys() | {k for r in order for k in traced.metrics[r]}:
        want = np.array([traced.metrics[r].get(k, 0.0) for r in order])
        diff = np.abs(got.get(k, np.zeros(len(order))) - want)
        rel = np.maximum(rel, np.where(diff > 0, diff / np.maximum(np.abs(want), 1e-300), 0.0))
    if float(rel.max()) > EXACT_RTOL:
        raise FitFailed(f"the fitted counts give a total {float(rel.max()):.2e} away from counting")
    return model.evaluate(d), len(traced.traces), float(rel[n_fit:].max()), len(order) - n_fit, "; ".join(notes)


def _decorrelate(raw: IntArray, names: Sequence[str]) -> tuple[FloatArray, list[str]]:
    """The basis of features: a batch dimension that is a rounded length of another (a
    transcript's length from the audio's) enters as its residue (see :class:`Length`); one
    affine in another is left out."""
    cols: list[FloatArray] = []
    notes: list[str] = []
    derived: set[int] = set()
    for k in range(raw.shape[1]):
        forms = [f for j in range(raw.shape[1]) if j != k and j not in derived
                 for f in floor_forms(j, raw[:, j], raw[:, k])][:1]
        if not forms:
            cols.append(raw[:, k].astype(np.float64))
            continue
        derived.add(k)
        if forms[0].m > 1:
            cols.append(forms[0].residue(raw))
            notes.append(f"{names[k]} = {forms[0].describe(names)}")
    return np.stack(cols, axis=1) if cols else np.zeros((raw.shape[0], 0)), notes


@dataclass
class _Model:
    """The fitted per-signature metrics: ``coef``, the fitted columns' coefficients, shape
    ``(n_monomials, n_columns)``, rounded where ``integer`` (counts); ``sums``, how many times each
    column adds to each of ``metrics``, shape ``(n_columns, n_metrics)``; ``pairs``, the roofline
    terms: FLOPs and bytes columns, their weight and precision, and the column scaling them."""

    coef: FloatArray
    integer: NDArray[np.bool_]
    metrics: list[str]
    sums: FloatArray
    pairs: list[tuple[IntArray, IntArray, FloatArray, list[str | None], int | None]]
    peaks: Devices

    @classmethod
    def build(cls, coef: FloatArray, integer: NDArray[np.bool_], cols: list[tuple[int, str]],
              of_col: IntArray, rows: Sequence[TraceRow], peaks: Devices) -> _Model:
        metrics = sorted({k for _, k in cols if not k.startswith((_PART, _SCALE))})
        col_of: dict[tuple[int, str], int] = {c: int(of_col[j]) for j, c in enumerate(cols)}
        sums = np.zeros((coef.shape[1], len(metrics)))
        for j, (_, k) in enumerate(cols):
            if not k.startswith((_PART, _SCALE)):
                sums[of_col[j], metrics.index(k)] += 1.0
        zero: int = coef.shape[1]  # an operator without a FLOPs (or bytes) column reads this zero column
        terms: dict[_Term, float] = {}
        pairs: list[tuple[IntArray, IntArray, FloatArray, list[str | None], int | None]] = []
        for i, row in enumerate(rows):
            if row.is_op:
                op: _Term = (col_of.get((i, "flops"), zero), col_of.get((i, "bytes"), zero), row.precision)
                terms[op] = terms.get(op, 0.0) + 1.0
            elif row.parts is not None:
                # A block's roofline: its scale times its operators', each at max(flops/peak, bytes/bandwidth).
                part: dict[_Term, float] = {}
                for p, (c, _, _, precision) in enumerate(row.parts):
                    fb: _Term = (col_of[(i, f"{_PART}{p}.flops")], col_of[(i, f"{_PART}{p}.bytes")], precision)
                    part[fb] = part.get(fb, 0.0) + c
                pairs.append((*cls._split(part), col_of[(i, _SCALE)]))
        pairs.insert(0, (*cls._split(terms), None))
        return cls(coef, integer, metrics, sums, pairs, dict(peaks))

    @staticmethod
    def _split(terms: dict[_Term, float]) -> tuple[IntArray, IntArray, FloatArray, list[str | None]]:
        keys = list(terms)
        return (np.array([k[0] for k in keys], dtype=np.int64), np.array([k[1] for k in keys], dtype=np.int64),
                np.array([terms[k] for k in keys]), [k[2] for k in keys])

    def evaluate(self, d: FloatArray) -> dict[str, FloatArray]:
        """Every metric of every row of the design ``d``."""
        names = sorted({*self.metrics, *(f"roofline_{g}_s" for g in self.peaks)})
        out = {k: np.zeros(d.shape[0]) for k in names}
        for lo in range(0, d.shape[0], CHUNK):
            vals = d[lo:lo + CHUNK] @ self.coef
            vals[:, self.integer] = np.round(vals[:, self.integer])
            vals = np.hstack([vals, np.zeros((len(vals), 1))])
            # Sums of counts below 2**53 are exact in any order.
            summed = vals[:, :-1] @ self.sums
            for m, k in enumerate(self.metrics):
                out[k][lo:lo + CHUNK] = summed[:, m]
            for g, target in self.peaks.items():
                for f_cols, b_cols, weight, precisions, s_col in self.pairs:
                    pf = np.array([target.peak(p) for p in precisions])
                    per = np.maximum(vals[:, f_cols] / pf, vals[:, b_cols] / target.bandwidth) @ weight
                    # Blocks without known operators carry their fitted roofline in ``sums``.
                    out[f"roofline_{g}_s"][lo:lo + CHUNK] += per if s_col is None else vals[:, s_col] * per
        return out
