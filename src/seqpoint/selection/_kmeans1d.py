"""Optimal weighted 1-D k-means (Ckmeans): ``k`` contiguous groups of sorted values with the
least weighted within-group sum of squares (times half the cost's curvature, the projection
error). The DP ``D[l][i] = min_j D[l-1][j] + SSE(j, i)`` has monotone optimal splits, so
each layer is divide and conquer (Wang & Song 2011), one numpy pass per recursion depth.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["KMeans1D"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class KMeans1D:
    """Layered DP table for optimal weighted 1-D k-means; solutions for every ``k <= max_k``.

    Parameters
    ----------
    x : ndarray of shape (m,)
        Values sorted in non-decreasing order.
    w : ndarray of shape (m,)
        Positive weights.
    """

    def __init__(self, x: FloatArray, w: FloatArray) -> None:
        x = np.asarray(x, dtype=np.float64)
        w = np.asarray(w, dtype=np.float64)
        assert x.ndim == 1 and x.shape == w.shape and x.shape[0] >= 1
        assert np.all(np.diff(x) >= 0) and np.all(w > 0)
        self.m = int(x.shape[0])
        # Centre and scale before the prefix sums: S2 - S1²/W cancels badly otherwise.
        centre = float(np.sum(w * x) / np.sum(w))
        scale = float(np.max(np.abs(x - centre))) or 1.0
        z = (x - centre) / scale
        self._scale2 = scale * scale
        zero = np.zeros(1)
        self._W = np.concatenate([zero, np.cumsum(w)])
        self._S1 = np.concatenate([zero, np.cumsum(w * z)])
        self._S2 = np.concatenate([zero, np.cumsum(w * z * z)])
        # Layer 1: one group holding the prefix [0, i).
        idx = np.arange(self.m + 1)
        d1 = np.full(self.m + 1, np.inf)
        d1[1:] = self._cost(np.zeros(self.m, dtype=np.int64), idx[1:])
        d1[0] = np.inf
        self._D: list[FloatArray] = [d1]
        self._opt: list[IntArray] = [np.zeros(self.m + 1, dtype=np.int64)]

    @property
    def max_k(self) -> int:
        """Layers computed so far."""
        return len(self._D)

    def _cost(self, j: IntArray, i: IntArray) -> FloatArray:
        """SSE (in scaled units) of segments ``[j, i)``."""
        wsum = self._W[i] - self._W[j]
        s1 = self._S1[i] - self._S1[j]
        sse = (self._S2[i] - self._S2[j]) - s1 * s1 / wsum
        return np.maximum(sse, 0.0)

    def extend(self, k: int) -> None:
        """Compute layers up to ``min(k, m)``."""
        k = min(k, self.m)
        while len(self._D) < k:
            self._add_layer()

    def _add_layer(self) -> None:
        layer = len(self._D) + 1  # number of groups in the new layer
        prev = self._D[-1]
        m = self.m
        cur = np.full(m + 1, np.inf)
        opt = np.zeros(m + 1, dtype=np.int64)
        # Intervals of i still to solve, with the range their optimal j must lie in.
        ilo = np.array([layer], dtype=np.int64)
        ihi = np.array([m], dtype=np.int64)
        jlo = np.array([layer - 1], dtype=np.int64)
        jhi = np.array([m - 1], dtype=np.int64)
        while ilo.shape[0]:
            mid = (ilo + ihi) // 2
            lo = jlo
            hi = np.minimum(jhi, mid - 1)
            lens = hi - lo + 1
            assert np.all(lens >= 1)
            starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
            seg = np.repeat(np.arange(mid.shape[0]), lens)
            j = lo[seg] + (np.arange(int(lens.sum())) - starts[seg])
            vals = prev[j] + self._cost(j, mid[seg])
            segmin = np.minimum.reduceat(vals, starts)
            hits = np.flatnonzero(vals == segmin[seg])
            first = hits[np.searchsorted(seg[hits], np.arange(mid.shape[0]), side="left")]
            best = j[first]
            cur[mid] = segmin
            opt[mid] = best
            left = mid - 1 >= ilo
            right = mid + 1 <= ihi
            ilo, ihi, jlo, jhi = (
                np.concatenate([ilo[left], mid[right] + 1]),
                np.concatenate([mid[left] - 1, ihi[right]]),
                np.concatenate([jlo[left], best[right]]), np.concatenate([best[left], jhi[right]]),
            )
        self._D.append(cur)
        self._opt.append(opt)

    def bounds(self, k: int) -> IntArray:
        """Group boundaries ``0 = b_0 < ... < b_k = m`` of the optimal ``k``-partition."""
        assert 1 <= k <= self.m
        self.extend(k)
        out = np.empty(k + 1, dtype=np.int64)
        out[k] = self.m
        i = self.m
        for layer in range(k, 0, -1):
            i = int(self._opt[layer - 1][i]) if layer > 1 else 0
            out[layer - 1] = i
        return out

    def sse(self, k: int) -> float:
        """Minimum weighted within-group sum of squares with ``k`` groups."""
        self.extend(k)
        return float(self._D[k - 1][self.m]) * self._scale2
