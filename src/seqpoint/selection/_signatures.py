"""Fast collapse of a schedule to its unique cost signatures.

Every selector works on the few hundred to few thousand unique signatures of a run,
not on its millions of iterations. ``IterationSchedule.unique_signatures`` sorts rows
of a 2-D array, which takes several seconds on 10M iterations; here the signature
columns are packed into one int64 key (mixed radix, first column most significant,
so the order is the same lexicographic order) and counted without a sort when the
key range is small.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from seqpoint.schedule import IterationSchedule

__all__ = ["SignatureTable", "signature_table"]

IntArray = NDArray[np.int64]

# Counting with bincount beats sorting while the key range stays within a few times
# the number of rows; the cap bounds the temporary count array (8 bytes per slot).
_MAX_BINCOUNT_RANGE = 1 << 25


def _dense(key: IntArray) -> tuple[IntArray, IntArray]:
    """Dense ids (0..u-1, in increasing key order) and the distinct keys."""
    lo = int(key.min())
    span = int(key.max()) - lo + 1
    if span <= max(2 * key.shape[0], 1 << 16) and span <= _MAX_BINCOUNT_RANGE:
        shifted = key - lo
        counts = np.bincount(shifted, minlength=span)
        present = np.flatnonzero(counts)
        remap = np.full(span, -1, dtype=np.int64)
        remap[present] = np.arange(present.shape[0], dtype=np.int64)
        return remap[shifted], present.astype(np.int64) + lo
    uniq, inverse = np.unique(key, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), uniq.astype(np.int64)


@dataclass(frozen=True, eq=False)
class SignatureTable:
    """Unique signatures of a schedule, with counts and the iteration-to-signature map.

    Attributes
    ----------
    columns : tuple of str
        Names of the signature columns (``batch_size, seq_len, tgt_len[, sum_sq_len]``).
    signatures : ndarray of shape (n_unique, n_columns)
        Unique signature rows, sorted lexicographically.
    counts : ndarray of shape (n_unique,)
        Iterations with each signature; sums to ``n_iterations``.
    inverse : ndarray of shape (n_iterations,)
        Index into ``signatures`` of every iteration.
    packed : bool
        True when ``sum_sq_len`` is part of the signature.
    """

    columns: tuple[str, ...]
    signatures: IntArray
    counts: IntArray
    inverse: IntArray
    packed: bool

    def __len__(self) -> int:
        return int(self.counts.shape[0])

    def column(self, name: str) -> IntArray:
        """One signature column, shape ``(n_unique,)``."""
        return self.signatures[:, self.columns.index(name)]

    def as_schedule(self) -> IterationSchedule:
        """One row per unique signature, as a schedule (for cost models on signatures).

        ``padded_tokens`` is ``batch_size * (seq_len + tgt_len)``; ``sum_sq_len`` comes from
        the signature when packed, else the padded ``batch_size * seq_len**2``.
        """
        cols = {name: self.column(name) for name in self.columns}
        return IterationSchedule.from_columns(cols, meta={"packed": self.packed})

    def first_rows(self, which: IntArray) -> IntArray:
        """Row position of the first iteration having each signature in ``which``.

        Parameters
        ----------
        which : ndarray of shape (k,)
            Distinct signature indices.

        Returns
        -------
        ndarray of shape (k,)
            Row positions, aligned with ``which``.
        """
        which = np.asarray(which, dtype=np.int64)
        lookup = np.full(len(self), -1, dtype=np.int64)
        lookup[which] = np.arange(which.shape[0], dtype=np.int64)
        hit = lookup[self.inverse]
        rows = np.flatnonzero(hit >= 0)
        # rows is increasing, so the first occurrence of each label is its first row.
        labels, first = np.unique(hit[rows], return_index=True)
        out = np.empty(which.shape[0], dtype=np.int64)
        out[labels] = rows[first]
        return out


def signature_table(schedule: IterationSchedule) -> SignatureTable:
    """Collapse ``schedule`` to its unique signatures (same result as ``unique_signatures``).

    Parameters
    ----------
    schedule : IterationSchedule
        The run.

    Returns
    -------
    SignatureTable
        Signatures sorted lexicographically, their counts and the inverse map.
    """
    names = schedule.signature_columns()
    key: IntArray | None = None
    for name in names:
        col = getattr(schedule, name)
        lo = int(col.min())
        span = int(col.max()) - lo + 1
        if key is None:
            key = col - lo
            continue
        # Mixed radix: key * span + col keeps lexicographic order; densify first if
        # the product could overflow int64.
        if (int(key.max()) + 1) * span >= 2**62:
            key, _ = _dense(key)
        key = key * span + (col - lo)
    assert key is not None
    inverse, _ = _dense(key)
    counts = np.bincount(inverse).astype(np.int64)
    # One representative row per signature gives the signature values.
    first = np.empty(counts.shape[0], dtype=np.int64)
    first[inverse[::-1]] = np.arange(inverse.shape[0] - 1, -1, -1, dtype=np.int64)
    sig = np.stack([getattr(schedule, c)[first] for c in names], axis=1)
    return SignatureTable(
        columns=tuple(names),
        signatures=sig.astype(np.int64),
        counts=counts,
        inverse=inverse,
        packed=schedule.is_packed,
    )
