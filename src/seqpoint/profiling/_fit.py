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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from seqpoint.profiling._counting import Cost, TraceRow, count_step
from seqpoint.profiling._state import meta_clone
from seqpoint.workloads import BatchShape, TorchWorkload, Workload

__all__ = ["Devices", "FitFailed", "Traced", "count", "features", "fit"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Devices = Mapping[str, tuple[float, float]]

#: Held-out signatures the fit must reproduce exactly.
N_CHECK = 8
#: Relative tolerance on fitted non-integer values (roofline seconds of memoized blocks).
BLOCK_RTOL = 1e-9
#: Largest relative difference, on any metric, between the fit and counting of a counted
#: signature (the sums run in another order; an exact fit differs by ~1e-15).
EXACT_RTOL = 1e-11
#: Fewest distinct values of a length inside the model before its rounding is inferred.
MIN_STEPS = 4
#: Fitted columns that are not metrics: a block's scale and its operators' counts.
_SCALE, _PART = "scale", "part"
#: Signatures from which batch dimensions are looked up (see :func:`features`), and the
#: random signatures of the sample that decides whether they can be.
LOOKUP_FROM, N_PROBE = 2000, 256
_QUOTES = "[]'\""
#: Signatures evaluated together (bounds memory: ops × signatures values per metric).
CHUNK = 512


def _row_values(row: TraceRow) -> dict[str, float]:
    """What is fitted of one trace row: an operator's roofline follows from its FLOPs and
    bytes, and so does a block's whose operators are known (from theirs)."""
    drop = row.is_op or row.parts is not None
    out = {k: v for k, v in row.cost.metrics().items() if not (drop and k.startswith("roofline_"))}
    if row.parts is not None:
        out[_SCALE] = row.scale
        for p, (_, f, b) in enumerate(row.parts):
            out[f"{_PART}{p}.flops"], out[f"{_PART}{p}.bytes"] = f, b
    return out


def features(workload: Workload, sigs: IntArray, seed: int = 0) -> tuple[FloatArray, list[str]] | None:
    """Every dimension of every batch tensor, per signature, and its name (None when the
    layout varies).

    Making a batch takes ~1 ms; on a large run the batch is made only on a sample covering
    every value of every signature column (and pairs of signatures sharing a value): a
    dimension that is one column's function on it is looked up, and the rest are made."""
    import torch
    from torch.utils._pytree import keystr, tree_flatten_with_path

    clone = meta_clone(workload) if isinstance(workload, TorchWorkload) else None
    source: Workload = workload if clone is None else clone  # its own batches have the same dimensions
    names: list[str] = []

    def dims(rows: IntArray) -> FloatArray | None:
        out: list[list[int]] = []
        for sig in sigs[rows].tolist():
            leaves, _ = tree_flatten_with_path(source.make_batch(tuple(int(v) for v in sig)))
            tensors = [(keystr(path), t) for path, t in leaves if isinstance(t, torch.Tensor)]
            out.append([int(d) for _, t in tensors for d in t.shape])
            if not names:
                names.extend(f"{path.strip(_QUOTES)}.shape[{k}]" for path, t in tensors for k in range(t.dim()))
            if len(out[-1]) != len(out[0]):
                return None
        return np.asarray(out, dtype=np.float64)

    n = len(sigs)
    f = _looked_up(sigs, dims, np.random.default_rng(seed)) if n > LOOKUP_FROM else None
    if f is None:
        f = dims(np.arange(n))
        if f is None:
            return None
    # Constant and repeated dimensions add nothing to the basis.
    keep = [j for j in range(f.shape[1]) if np.ptp(f[:, j]) > 0]
    _, first = np.unique(f[:, keep].T, axis=0, return_index=True)
    cols = [keep[j] for j in sorted(first)]
    return f[:, cols], [names[j] for j in cols]


def _looked_up(sigs: IntArray, dims: Callable[[IntArray], FloatArray | None],
               rng: np.random.Generator) -> FloatArray | None:
    """The batch dimensions of every signature from a sample (see :func:`features`), or
    None when one is not a function of a single signature column on the sample."""
    pick: set[int] = set(rng.choice(len(sigs), N_PROBE, replace=False).tolist())
    for c in range(sigs.shape[1]):
        values, counts = np.unique(sigs[:, c], return_counts=True)
        # Pairs that share this column's value and may differ elsewhere: a dimension that
        # also depends on another column shows it on them.
        for v in rng.permutation(values[counts > 1])[:N_PROBE // 8].tolist():
            pick |= set(rng.choice(np.flatnonzero(sigs[:, c] == v), 2, replace=False).tolist())
    rows = np.asarray(sorted(pick), dtype=np.int64)
    sample = dims(rows)
    if sample is None:
        return None
    out = np.empty((len(sigs), sample.shape[1]))
    lookup: list[tuple[int, int]] = []
    for k in range(sample.shape[1]):
        if np.ptp(sample[:, k]) == 0:
            out[:, k] = sample[0, k]
            continue
        # An affine or rounded function of one column (a transcript's length from the audio's),
        # told apart from the other forms that fit the sample by the batch where they differ.
        v = sample[:, k].astype(np.int64)
        for c in range(sigs.shape[1]):
            forms = _floor_forms(c, sigs[rows, c], v)
            while len(forms) > 1:
                values = np.stack([f.values(sigs) for f in forms])
                differ = np.flatnonzero(np.ptp(values, axis=0) > 0)
                if len(differ) == 0:
                    break
                seen = dims(differ[:1])
                if seen is None or seen.shape[1] != sample.shape[1]:
                    return None
                forms = [f for f, val in zip(forms, values[:, differ[0]], strict=True) if val == seen[0, k]]
            if forms:
                out[:, k] = forms[0].values(sigs)
                break
        else:
            lookup += [(k, c) for c in range(sigs.shape[1])]
    if not lookup:
        return out
    # Any other function of one column is looked up: every value of that column is read.
    firsts = {int(i) for c in {c for _, c in lookup} for i in np.unique(sigs[:, c], return_index=True)[1]}
    extra = np.asarray(sorted(firsts - set(rows.tolist())), dtype=np.int64)
    more = dims(extra) if len(extra) else np.zeros((0, sample.shape[1]))
    if more is None or more.shape[1] != sample.shape[1]:
        return None
    rows, sample = np.concatenate([rows, extra]), np.vstack([sample, more])
    for k in sorted({k for k, _ in lookup}):
        for c in range(sigs.shape[1]):
            values, where = np.unique(sigs[rows, c], return_inverse=True)
            table = np.full(len(values), np.nan)
            table[where.reshape(-1)] = sample[:, k]
            if np.array_equal(table[where.reshape(-1)], sample[:, k]) and np.isin(sigs[:, c], values).all():
                out[:, k] = table[np.searchsorted(values, sigs[:, c])]
                break
        else:
            return None
    return out


@dataclass(frozen=True)
class _Length:
    """A length rounded inside the model: ``a * floor((x + c) / m) + d`` of feature ``x``."""

    j: int
    m: int
    c: int
    a: int
    d: int

    def values(self, x: IntArray) -> IntArray:
        return self.a * ((x[:, self.j] + self.c) // self.m) + self.d

    def residue(self, x: IntArray) -> FloatArray:
        """``(x + c) mod m``: with ``x`` it spans the polynomials of the length, and unlike the
        length it is not nearly collinear with ``x`` (a well-conditioned basis)."""
        return ((x[:, self.j] + self.c) % self.m).astype(np.float64)

    def describe(self, names: Sequence[str]) -> str:
        inner = f"({names[self.j]} + {self.c}) // {self.m}" if self.c else f"{names[self.j]} // {self.m}"
        return (f"{self.a} * " if self.a != 1 else "") + inner + (f" {'+-'[self.d < 0]} {abs(self.d)}" if self.d else "")


def _floor_forms(j: int, x: IntArray, v: IntArray) -> list[_Length]:
    """Every ``v = a * floor((x + c) / m) + d`` that holds on every row (``m = 1``: affine)."""
    if np.ptp(x) == 0 or np.ptp(v) == 0:
        return []
    order = np.argsort(x, kind="stable")
    xs, vs = x[order], v[order]
    dv = np.diff(vs)
    if np.any((np.diff(xs) == 0) & (dv != 0)):
        return []  # not a function of x
    sign = 1 if vs[-1] > vs[0] else -1
    if np.any(sign * dv < 0):
        return []
    a = sign * int(np.gcd.reduce(np.abs(dv[dv != 0])))
    q = (vs - vs[0]) // a
    top, span = int(q[-1]), int(xs[-1] - xs[0])
    if top < MIN_STEPS:
        return []  # too few values of the length to tell its rounding
    out = []
    for m in range(max(1, span // (top + 1)), span // (top - 1) + 2):
        for c in range(m):
            qq = (xs + c) // m
            if np.array_equal(qq - qq[0], q):
                out.append(_Length(j, m, c, a, int(vs[0] - a * qq[0])))
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


def count(workload: Workload, sig: Sequence[int], devices: Devices,
          trace: list[TraceRow] | None = None, shape: BatchShape | None = None) -> Cost:
    return count_step(workload, tuple(int(v) for v in sig), devices=devices, trace=trace, shape=shape)


class FitFailed(Exception):
    """The per-operator fit does not reproduce a held-out signature (message says why)."""


@dataclass
class Traced:
    """The signatures of one regime counted with their traces, by row."""

    workload: Workload
    sigs: IntArray
    devices: Devices
    shapes: Sequence[BatchShape | None] | None
    traces: dict[int, list[TraceRow]] = field(default_factory=dict)
    metrics: dict[int, dict[str, float]] = field(default_factory=dict)

    def count(self, rows: Sequence[int]) -> None:
        for r in rows:
            if r not in self.traces:
                tr: list[TraceRow] = []
                cost = count(self.workload, self.sigs[r], self.devices, tr,
                             shape=None if self.shapes is None else self.shapes[r])
                self.traces[r], self.metrics[r] = tr, cost.metrics()

    def dims(self, rows: Sequence[int]) -> IntArray | None:
        """Every traced dimension, shape ``(len(rows), n_dims)`` (None when they differ in number)."""
        flat = [[d for row in self.traces[r] for d in row.dims] for r in rows]
        return np.asarray(flat, dtype=np.int64) if len({len(f) for f in flat}) == 1 else None


def _lengths(traced: Traced, rows: list[int], raw: IntArray, names: Sequence[str]) -> list[_Length]:
    """Lengths the model rounds from the batch dimensions (a strided convolution's output),
    read from the counted operators' dimensions. Forms that agree on the counted rows but
    not on every signature are told apart by counting a signature where they differ."""
    counted = list(rows)
    dims = traced.dims(counted)
    if dims is None:
        return []
    _, first = np.unique(dims.T, axis=0, return_index=True)
    found: list[_Length] = []
    for col in sorted(first.tolist()):
        v = dims[:, col]
        forms = [f for j in range(raw.shape[1]) for f in _floor_forms(j, raw[counted, j], v)]
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
    lengths = _lengths(traced, seen, raw, names) if raw.shape[1] else []
    check_rows += seen[len(fit_rows) + len(check_rows):]
    if lengths:
        for ln in lengths:
            v = ln.values(raw)
            if np.ptp(np.sign(v - 1)) > 0:
                raise FitFailed(f"the length {ln.describe(names)} inside the model reaches 0 or 1 on "
                                 "some signatures (other operators run)")
        basis = np.hstack([basis, np.stack([ln.residue(raw) for ln in lengths], axis=1)])
        _, keep = np.unique(basis.T, axis=0, return_index=True)
        basis = basis[:, sorted(k for k in keep.tolist() if np.ptp(basis[:, k]) > 0)]
        notes.append("lengths inside the model: " + ", ".join(sorted({ln.describe(names) for ln in lengths})))
        monos = _monomials(basis)
        counted = set(traced.traces)
        free = np.asarray([r for r in range(len(sigs)) if r not in counted], dtype=np.int64)
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
    transcript's length from the audio's) enters as its residue (see :class:`_Length`); one
    affine in another is left out."""
    cols: list[FloatArray] = []
    notes: list[str] = []
    derived: set[int] = set()
    for k in range(raw.shape[1]):
        forms = [f for j in range(raw.shape[1]) if j != k and j not in derived
                 for f in _floor_forms(j, raw[:, j], raw[:, k])][:1]
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
    """The fitted per-signature metrics: polynomial columns, rounded where they count, and
    how the metrics and roofline times are made of them."""

    coef: FloatArray
    """Coefficients of the fitted columns, shape ``(n_monomials, n_columns)``."""
    integer: NDArray[np.bool_]
    """Columns that are counts (rounded), shape ``(n_columns,)``."""
    metrics: list[str]
    """Metric names, in the order of :attr:`sums`' columns."""
    sums: FloatArray
    """How many times each column adds to each metric, shape ``(n_columns, n_metrics)``."""
    pairs: list[tuple[IntArray, IntArray, FloatArray, int | None]]
    """Roofline terms: FLOPs and bytes columns, their weight, and the column scaling them."""
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
        terms: dict[tuple[int, int], float] = {}
        pairs: list[tuple[IntArray, IntArray, FloatArray, int | None]] = []
        for i, row in enumerate(rows):
            if row.is_op:
                op: tuple[int, int] = (col_of.get((i, "flops"), zero), col_of.get((i, "bytes"), zero))
                terms[op] = terms.get(op, 0.0) + 1.0
            elif row.parts is not None:
                # A block's roofline: its scale times its operators', each at max(flops/peak, bytes/bandwidth).
                part: dict[tuple[int, int], float] = {}
                for p, (c, _, _) in enumerate(row.parts):
                    fb: tuple[int, int] = (col_of[(i, f"{_PART}{p}.flops")], col_of[(i, f"{_PART}{p}.bytes")])
                    part[fb] = part.get(fb, 0.0) + c
                pairs.append((*cls._split(part), col_of[(i, _SCALE)]))
        pairs.insert(0, (*cls._split(terms), None))
        return cls(coef, integer, metrics, sums, pairs, dict(peaks))

    @staticmethod
    def _split(terms: dict[tuple[int, int], float]) -> tuple[IntArray, IntArray, FloatArray]:
        keys = list(terms)
        return (np.array([f for f, _ in keys], dtype=np.int64), np.array([b for _, b in keys], dtype=np.int64),
                np.array([terms[k] for k in keys]))

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
            for g, (pf, bw) in self.peaks.items():
                for f_cols, b_cols, weight, s_col in self.pairs:
                    per = np.maximum(vals[:, f_cols] / pf, vals[:, b_cols] / bw) @ weight
                    # Blocks without known operators carry their fitted roofline in ``sums``.
                    out[f"roofline_{g}_s"][lo:lo + CHUNK] += per if s_col is None else vals[:, s_col] * per
        return out
