"""How the SeqPoint selector groups signatures, picks representatives and searches k.

Two groupings of the unique signatures into ``k`` groups: the optimal weighted 1-D
k-means on the cost proxy (:class:`OptimalGrouping`, a Ckmeans dynamic programme) and
the SeqPoint paper's equal-width ``seq_len`` bins (:class:`SLBinGrouping`). Signatures
that vary in more than one column can tie on the proxy yet cost differently; those
groups are refined in the space of the elementary cost components
(:func:`nearest_centroid` after a k-means there). :func:`choose_representatives` picks
one signature per group; :func:`smallest_k` is the search ``max_error`` runs over k.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from seqpoint.selection._kmeans1d import KMeans1D

__all__ = [
    "MAX_REFINE_K",
    "Grouping",
    "OptimalGrouping",
    "SLBinGrouping",
    "choose_representatives",
    "nearest_centroid",
    "smallest_k",
]

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

#: Largest k refined by a k-means in component space (one k-means per k tried).
MAX_REFINE_K = 64


class Grouping(Protocol):
    """Groups of the unique signatures for any ``k`` in ``1..k_cap``."""

    k_cap: int
    """Largest number of non-empty groups."""
    unit: str
    """What ``k_cap`` counts, for the warning when ``n_points`` exceeds it."""

    def groups(self, k: int) -> IntArray:
        """Group ``0..k-1`` of every unique signature, shape ``(n_unique,)``."""
        ...

    def reserve(self, k: int) -> None:
        """Prepare for the ``k`` a search will try next (no effect on the groups)."""
        ...


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
        # The dynamic programme adds one layer per k: doubling its depth ahead of a
        # search keeps the layers computed once.
        km = self._km
        if k > km.max_k:
            km.extend(min(self.k_cap, max(k, 2 * km.max_k)))


class SLBinGrouping:
    """Equal-width bins over ``seq_len`` (the SeqPoint paper)."""

    unit = "distinct seq_len values"

    def __init__(self, seq_len: IntArray, counts: FloatArray) -> None:
        uniq_sl, sl_idx = np.unique(seq_len, return_inverse=True)
        self._sl_idx = sl_idx.reshape(-1)
        sl_counts = np.bincount(self._sl_idx, weights=counts).astype(np.float64)
        self._binner = _SLBinner(uniq_sl, sl_counts)
        self.k_cap = int(uniq_sl.shape[0])

    def groups(self, k: int) -> IntArray:
        return self._binner(k)[self._sl_idx]

    def reserve(self, k: int) -> None:
        return None


class _SLBinner:
    """Group the sorted distinct ``seq_len`` values into ``k`` equal-width bins.

    The SeqPoint paper cuts the length range into equal-width bins. Bins left empty do
    not count: the number of bins grows until ``k`` are non-empty, and if that
    overshoots, the adjacent non-empty bins with the fewest iterations are merged.
    """

    def __init__(self, uniq_sl: IntArray, sl_counts: FloatArray) -> None:
        self.uniq_sl = uniq_sl
        self.sl_counts = sl_counts
        self.lo = int(uniq_sl[0])
        self.span = int(uniq_sl[-1]) - self.lo + 1
        # Every bin count below the one found for a smaller k has too few non-empty bins,
        # so a scan over increasing k resumes where the last search stopped.
        self._hint = (0, 1)

    def _raw(self, nb: int) -> IntArray:
        return np.minimum(((self.uniq_sl - self.lo) * nb) // self.span, nb - 1)

    def __call__(self, k: int) -> IntArray:
        """Bin (0..k-1) of every distinct ``seq_len``, shape ``(n_distinct,)``."""
        assert 1 <= k <= self.uniq_sl.shape[0]
        k_prev, nb_prev = self._hint
        nb = max(k, nb_prev) if k_prev < k else k
        while True:
            raw = self._raw(nb)
            # raw is non-decreasing, so distinct bins are counted by its steps.
            nonempty = 1 + int(np.count_nonzero(np.diff(raw)))
            if nonempty >= k or nb >= self.span:
                break
            nb += 1
        self._hint = (k, nb)
        labels = np.concatenate([[0], np.cumsum(np.diff(raw) > 0)]).astype(np.int64)
        n_bins = int(labels[-1]) + 1
        while n_bins > k:
            weight = np.bincount(labels, weights=self.sl_counts, minlength=n_bins)
            j = int(np.argmin(weight[:-1] + weight[1:]))
            labels[labels > j] -= 1
            n_bins -= 1
        return labels


def choose_representatives(
    group: IntArray, n_groups: int, proxy: FloatArray, counts: FloatArray, basis: FloatArray
) -> IntArray:
    """Representative signature of every group.

    The representative ``r`` of group ``g`` minimises ``|W_g·proxy[r] − Σ_g counts·proxy|``:
    the weighted projection of the proxy is as close as possible to the group's total.
    Among signatures within a relative 1e-9 of the best (equal proxy, different shape),
    the one whose basis components are closest to the group's mean components wins,
    so a group mixing batch sizes is represented by its typical batch size.

    Parameters
    ----------
    group : ndarray of shape (m,)
        Group of every signature, ``0..n_groups-1``; every group non-empty.
    proxy, counts : ndarray of shape (m,)
        Proxy value and iteration count of every signature.
    basis : ndarray of shape (m, n_components)
        Basis cost components of every signature.

    Returns
    -------
    ndarray of shape (n_groups,)
        Signature index of every group's representative.
    """
    wsum = np.bincount(group, weights=counts, minlength=n_groups)
    target = np.bincount(group, weights=counts * proxy, minlength=n_groups) / wsum
    dist = np.abs(proxy - target[group])
    tol = 1e-9 * np.maximum(np.abs(target), 1e-300)
    dist_key = np.floor(dist / tol[group])
    mean_basis = np.stack(
        [np.bincount(group, weights=counts * basis[:, j], minlength=n_groups) for j in range(basis.shape[1])],
        axis=1,
    ) / wsum[:, None]
    scale = np.where(mean_basis > 0, mean_basis, 1.0)
    secondary = np.sum(np.abs(basis - mean_basis[group]) / scale[group], axis=1)
    idx = np.arange(group.shape[0])
    order = np.lexsort((idx, -counts, secondary, dist_key, group))
    first = np.searchsorted(group[order], np.arange(n_groups), side="left")
    return order[first].astype(np.int64)


def smallest_k(attempt: Callable[[int], bool], k_cap: int, *, doubling: bool) -> int:
    """Smallest k in 1..k_cap for which ``attempt(k)`` holds (0 if none).

    Without refinement every k is tried in order (one DP layer and one O(m) pass each).
    With refinement a k-means runs per k, so k = 1, 2, 4, ..., 64 are tried, then the
    gap below the first success is bisected (the bound falls with k almost always);
    beyond 64 no refinement runs and k is scanned in order.
    """
    if not doubling:
        return next((k for k in range(1, k_cap + 1) if attempt(k)), 0)
    fail, k = 0, 1
    while k <= min(k_cap, MAX_REFINE_K):
        if attempt(k):
            while k - fail > 1:
                mid = (fail + k) // 2
                if attempt(mid):
                    k = mid
                else:
                    fail = mid
            return k
        fail, k = k, 2 * k
    start = min(k_cap, MAX_REFINE_K) + 1
    return next((k for k in range(start, k_cap + 1) if attempt(k)), 0)


def _centroids(z: FloatArray, w: FloatArray, g: IntArray, k: int) -> FloatArray:
    wsum = np.bincount(g, weights=w, minlength=k)
    cols = [np.bincount(g, weights=w * z[:, j], minlength=k) for j in range(z.shape[1])]
    return np.stack(cols, axis=1) / np.maximum(wsum, 1e-300)[:, None]  # type: ignore[no-any-return]


def nearest_centroid(z: FloatArray, w: FloatArray, g: IntArray, k: int) -> IntArray:
    """Per group, the signature nearest the group's weighted centroid in component space."""
    c = _centroids(z, w, g, k)
    d = np.sum((z - c[g]) ** 2, axis=1)
    order = np.lexsort((np.arange(g.shape[0]), -w, d, g))
    return order[np.searchsorted(g[order], np.arange(k), side="left")].astype(np.int64)
