"""Vectorised "how many samples fit from here" search used by the budgeted policies."""

from __future__ import annotations

import numpy as np

from seqpoint._signature import IntArray

__all__ = ["chase", "largest_fitting"]


def largest_fitting(values: IntArray, limit: IntArray, budget: int, extra: int, lower: IntArray | None = None
                    ) -> IntArray:
    """For every start ``s``, the largest ``k <= limit[s]`` with ``(k + extra) * max(values[s:s+k]) <= budget``
    (0 if none): a binary search for all starts at once over a sparse table of range maxima. ``extra`` 0 is
    fairseq's rule, 1 lhotse's ``close_to_exceeding``; ``lower`` holds counts known to fit."""
    n = values.shape[0]
    # No count beyond budget // values[s] can fit, since the batch maximum is >= values[s].
    lim = np.minimum(limit, budget // values).astype(np.int64)
    top = int(lim.max(initial=0))
    levels = [values]
    span = 1
    while span * 2 <= max(top, 1):
        prev = levels[-1]
        nxt = prev.copy()
        nxt[: n - span] = np.maximum(prev[: n - span], prev[span:])
        levels.append(nxt)
        span *= 2
    flat = np.concatenate(levels)
    log2 = np.zeros(max(top, 1) + 1, dtype=np.int64)
    if top >= 2:
        log2[2:] = np.floor(np.log2(np.arange(2, top + 1))).astype(np.int64)
    starts = np.arange(n, dtype=np.int64)
    lo = np.zeros(n, dtype=np.int64) if lower is None else np.clip(lower, 0, lim)
    hi = lim + 1
    active = np.flatnonzero(hi - lo > 1)
    while active.size:
        s = starts[active]
        mid = (lo[active] + hi[active]) // 2
        j = log2[mid]
        # max over [s, s + mid): two overlapping power-of-two windows.
        m = np.maximum(flat[j * n + s], flat[j * n + s + mid - (1 << j)])
        ok = (mid + extra) * m <= budget
        lo[active] = np.where(ok, mid, lo[active])
        hi[active] = np.where(ok, hi[active], mid)
        active = active[hi[active] - lo[active] > 1]
    return lo


def chase(step: IntArray) -> IntArray:
    """Batch starts reached from 0 by jumping ``s -> s + step[s]`` (every step >= 1)."""
    steps, out, s = step.tolist(), [], 0
    while s < len(steps):  # one iteration per batch, not per sample
        out.append(s)
        s += steps[s]
    return np.asarray(out, dtype=np.int64)
