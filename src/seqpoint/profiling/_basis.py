"""The basis of the per-operator fit (:mod:`seqpoint.profiling._fit`): every dimension of every
batch tensor, per signature (:func:`features`), and the lengths a model rounds from them
(:class:`Length`: ``a * floor((x + c) / m) + d`` of one dimension, found by :func:`floor_forms`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from seqpoint._signature import FloatArray, IntArray
from seqpoint.profiling._state import WorkloadState, meta_clone
from seqpoint.workloads import TorchWorkload, Workload

__all__ = ["Length", "features", "floor_forms"]

#: Fewest distinct values of a length inside the model before its rounding is inferred.
MIN_STEPS = 4
#: Signatures from which batch dimensions are looked up (see :func:`features`), and the
#: random signatures of the sample that decides whether they can be.
LOOKUP_FROM, N_PROBE = 2000, 256
_QUOTES = "[]'\""

def features(workload: Workload, sigs: IntArray, seed: int = 0,
             state: WorkloadState | None = None) -> tuple[FloatArray, list[str]] | None:
    """Every dimension of every batch tensor, per signature, and its name (None when the
    layout varies).

    Making a batch takes ~1 ms; on a large run the batch is made only on a sample covering
    every value of every signature column (and pairs of signatures sharing a value): a
    dimension that is one column's function on it is looked up, and the rest are made."""
    import torch
    from torch.utils._pytree import keystr, tree_flatten_with_path

    clone = meta_clone(workload, state or WorkloadState()) if isinstance(workload, TorchWorkload) else None
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
            forms = floor_forms(c, sigs[rows, c], v)
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
class Length:
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


def floor_forms(j: int, x: IntArray, v: IntArray) -> list[Length]:
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
                out.append(Length(j, m, c, a, int(vs[0] - a * qq[0])))
    return out
