"""How the SeqPoint selector groups signatures (optimal 1-D k-means on the proxy, or the
paper's equal-width ``seq_len`` bins), picks representatives and searches k."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from seqpoint._signature import FloatArray, IntArray

__all__ = ["MAX_REFINE_K", "Grouping", "KMeans1D", "OptimalGrouping", "SLBinGrouping", "choose_representatives",
           "group_means", "nearest_centroid", "smallest_k"]

#: Largest k refined by a k-means in component space (one k-means per k tried).
MAX_REFINE_K = 64


class KMeans1D:
    """Optimal weighted 1-D k-means of sorted values ``x`` (m,) with positive weights ``w`` (m,): ``k``
    contiguous groups with the least weighted within-group sum of squares, for every ``k <= max_k``. The
    DP ``D[l][i] = min_j D[l-1][j] + SSE(j, i)`` has monotone optimal splits, so each layer is divide
    and conquer (Wang & Song 2011), one numpy pass per recursion depth."""

    def __init__(self, x: FloatArray, w: FloatArray) -> None:
        x, w = np.asarray(x, dtype=np.float64), np.asarray(w, dtype=np.float64)
        assert x.ndim == 1 and x.shape == w.shape and x.shape[0] >= 1
        assert np.all(np.diff(x) >= 0) and np.all(w > 0)
        self.m = int(x.shape[0])
        # Centre and scale before the prefix sums: S2 - S1²/W cancels badly otherwise.
        centre = float(np.sum(w * x) / np.sum(w))
        scale = float(np.max(np.abs(x - centre))) or 1.0
        z = (x - centre) / scale
        self._scale2 = scale * scale
        self._W, self._S1, self._S2 = (np.concatenate([[0.0], np.cumsum(v)]) for v in (w, w * z, w * z * z))
        # Layer 1: one group holding the prefix [0, i).
        d1 = np.full(self.m + 1, np.inf)
        d1[1:] = self._cost(np.zeros(self.m, dtype=np.int64), np.arange(1, self.m + 1))
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
        layer, prev, m = len(self._D) + 1, self._D[-1], self.m  # layer: groups in the new layer
        cur = np.full(m + 1, np.inf)
        opt = np.zeros(m + 1, dtype=np.int64)
        # Intervals of i still to solve, with the range their optimal j must lie in.
        ilo, ihi, jlo, jhi = (np.array([v], dtype=np.int64) for v in (layer, m, layer - 1, m - 1))
        while ilo.shape[0]:
            mid = (ilo + ihi) // 2
            lo = jlo
            lens = np.minimum(jhi, mid - 1) - lo + 1
            assert np.all(lens >= 1)
            starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
            seg = np.repeat(np.arange(mid.shape[0]), lens)
            j = lo[seg] + (np.arange(int(lens.sum())) - starts[seg])
            vals = prev[j] + self._cost(j, mid[seg])
            segmin = np.minimum.reduceat(vals, starts)
            hits = np.flatnonzero(vals == segmin[seg])
            first = hits[np.searchsorted(seg[hits], np.arange(mid.shape[0]), side="left")]
            best = j[first]
            cur[mid], opt[mid] = segmin, best
            left, right = mid - 1 >= ilo, mid + 1 <= ihi
            ilo, ihi = np.concatenate([ilo[left], mid[right] + 1]), np.concatenate([mid[left] - 1, ihi[right]])
            jlo, jhi = np.concatenate([jlo[left], best[right]]), np.concatenate([best[left], jhi[right]])
        self._D.append(cur)
        self._opt.append(opt)

    def bounds(self, k: int) -> IntArray:
        """Group boundaries ``0 = b_0 < ... < b_k = m`` of the optimal ``k``-partition."""
        assert 1 <= k <= self.m
        self.extend(k)
        ends, i = [self.m], self.m  # walked back from the last group's end
        for layer in range(k, 1, -1):
            i = int(self._opt[layer - 1][i])
            ends.append(i)
        return np.array([0, *reversed(ends)], dtype=np.int64)

    def sse(self, k: int) -> float:
        """Minimum weighted within-group sum of squares with ``k`` groups."""
        self.extend(k)
        return float(self._D[k - 1][self.m]) * self._scale2


class OptimalGrouping:
    """Optimal weighted 1-D k-means of the signatures on the cost proxy."""

    unit = "unique signatures"

    def __init__(self, proxy: FloatArray, counts: FloatArray) -> None:
        m = proxy.shape[0]
        self._order = np.lexsort((np.arange(m), proxy))
        self._km = KMeans1D(proxy[self._order], counts[self._order])
        self.k_cap = m

    def groups(self, k: int) -> IntArray:
        bounds = self._km.bounds(k)
        g = np.empty(self.k_cap, dtype=np.int64)
        g[self._order] = np.repeat(np.arange(k), np.diff(bounds))
        return g

    def reserve(self, k: int) -> None:
        # Doubling the DP's depth ahead of a search computes each layer once.
        km = self._km
        if k > km.max_k:
            km.extend(min(self.k_cap, max(k, 2 * km.max_k)))


class SLBinGrouping:
    """Equal-width bins over ``seq_len`` (the SeqPoint paper): the bin count grows until ``k``
    bins hold a distinct ``seq_len``; an overshoot merges the lightest neighbouring pairs."""

    unit = "distinct seq_len values"

    def __init__(self, seq_len: IntArray, counts: FloatArray) -> None:
        self.uniq_sl, sl_idx = np.unique(seq_len, return_inverse=True)
        self._sl_idx = sl_idx.reshape(-1)
        self.sl_counts = np.bincount(self._sl_idx, weights=counts).astype(np.float64)
        self.k_cap = int(self.uniq_sl.shape[0])
        self.lo = int(self.uniq_sl[0])
        self.span = int(self.uniq_sl[-1]) - self.lo + 1
        # Every bin count below the one found for a smaller k has too few non-empty bins,
        # so a scan over increasing k resumes where the last search stopped.
        self._hint = (0, 1)

    def groups(self, k: int) -> IntArray:
        assert 1 <= k <= self.k_cap
        k_prev, nb = self._hint
        nb = max(k, nb) if k_prev < k else k
        while True:
            raw = np.minimum(((self.uniq_sl - self.lo) * nb) // self.span, nb - 1)
            # raw is non-decreasing, so distinct bins are counted by its steps.
            if 1 + int(np.count_nonzero(np.diff(raw))) >= k or nb >= self.span:
                break
            nb += 1
        self._hint = (k, nb)
        labels = np.concatenate([[0], np.cumsum(np.diff(raw) > 0)]).astype(np.int64)
        n_bins = int(labels[-1]) + 1
        while n_bins > k:
            weight = np.bincount(labels, weights=self.sl_counts, minlength=n_bins)
            labels[labels > int(np.argmin(weight[:-1] + weight[1:]))] -= 1
            n_bins -= 1
        return labels[self._sl_idx]

    def reserve(self, k: int) -> None:
        return None


#: A grouping: groups ``0..k-1`` of the unique signatures for any ``k`` in ``1..k_cap`` (``unit`` names
#: what it counts); ``reserve(k)`` prepares for the k a search tries next.
Grouping = OptimalGrouping | SLBinGrouping


def choose_representatives(group: IntArray, n_groups: int, proxy: FloatArray, counts: FloatArray, basis: FloatArray
                           ) -> IntArray:
    """Signature index of every group's representative, shape ``(n_groups,)``: it minimises
    ``|W_g·proxy[r] − Σ_g counts·proxy|``; among signatures within 1e-9 of the best, the one whose
    basis components are closest to the group's mean wins."""
    target = np.bincount(group, weights=counts * proxy, minlength=n_groups) / np.bincount(
        group, weights=counts, minlength=n_groups)
    tol = 1e-9 * np.maximum(np.abs(target), 1e-300)
    dist_key = np.floor(np.abs(proxy - target[group]) / tol[group])
    mean_basis = group_means(basis, counts, group, n_groups)
    scale = np.where(mean_basis > 0, mean_basis, 1.0)
    secondary = np.sum(np.abs(basis - mean_basis[group]) / scale[group], axis=1)
    idx = np.arange(group.shape[0])
    order = np.lexsort((idx, -counts, secondary, dist_key, group))
    first = np.searchsorted(group[order], np.arange(n_groups), side="left")
    return order[first].astype(np.int64)


def smallest_k(attempt: Callable[[int], bool], k_cap: int, *, doubling: bool) -> int:
    """Smallest k in 1..k_cap for which ``attempt(k)`` holds (0 if none). With ``doubling`` (a
    k-means per k), k = 1, 2, 4, ..., 64 are tried and the gap below the first success bisected;
    otherwise, and past 64, k is scanned in order."""
    fail, k = 0, 1
    while doubling and k <= min(k_cap, MAX_REFINE_K):
        if attempt(k):
            while k - fail > 1:
                mid = (fail + k) // 2
                fail, k = (fail, mid) if attempt(mid) else (mid, k)
            return k
        fail, k = k, 2 * k
    start = min(k_cap, MAX_REFINE_K) + 1 if doubling else 1
    return next((k for k in range(start, k_cap + 1) if attempt(k)), 0)


def group_means(z: FloatArray, w: FloatArray, g: IntArray, k: int) -> FloatArray:
    """Weighted mean of every column of ``z`` (m, J) in every group, shape ``(k, J)``."""
    wsum = np.maximum(np.bincount(g, weights=w, minlength=k), 1e-300)
    cols = [np.bincount(g, weights=w * z[:, j], minlength=k) for j in range(z.shape[1])]
    return np.stack(cols, axis=1) / wsum[:, None]  # type: ignore[no-any-return]


def nearest_centroid(z: FloatArray, w: FloatArray, g: IntArray, k: int) -> IntArray:
    """Per group, the signature nearest the group's weighted centroid in component space."""
    d = np.sum((z - group_means(z, w, g, k)[g]) ** 2, axis=1)
    order = np.lexsort((np.arange(g.shape[0]), -w, d, g))
    return order[np.searchsorted(g[order], np.arange(k), side="left")].astype(np.int64)
