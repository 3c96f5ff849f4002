"""Fast collapse of signature columns to their unique rows, counts and inverse map:
``np.unique(axis=0)`` takes seconds on 10M rows, so the columns are packed into one int64
key (mixed radix, same lexicographic order) and counted without a sort when its range is small."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from seqpoint._signature import IntArray

__all__ = ["unique_rows"]

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


def unique_rows(columns: Sequence[IntArray]) -> tuple[IntArray, IntArray, IntArray]:
    """Unique rows (sorted), counts and inverse map of the matrix whose columns (at least
    one, ``n >= 1`` rows, first most significant) are ``columns``, like ``np.unique(axis=0)``."""
    assert len(columns) >= 1
    key: IntArray | None = None
    for col in columns:
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
    # One representative row per unique key gives the row's values.
    first = np.empty(counts.shape[0], dtype=np.int64)
    first[inverse[::-1]] = np.arange(inverse.shape[0] - 1, -1, -1, dtype=np.int64)
    rows = np.stack([np.asarray(col)[first] for col in columns], axis=1).astype(np.int64)
    return rows, counts, inverse
