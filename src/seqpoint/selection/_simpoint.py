"""SimPoint-style selection (Sherwood et al. 2002; Hamerly et al. 2005): k-means over the
standardised signatures, weighted by their counts, ``k`` chosen by the BIC of Pelleg & Moore."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from seqpoint._params import Constraint, Interval, Options
from seqpoint._signature import FloatArray, IntArray
from seqpoint.schedule import IterationSchedule, signature_table
from seqpoint.selection._base import SELECTORS, BaseSelector
from seqpoint.selection._grouping import group_means

__all__ = ["weighted_kmeans"]


def _sq_dist(x: FloatArray, centers: FloatArray) -> FloatArray:
    return np.sum((x[:, None, :] - centers[None, :, :]) ** 2, axis=2)  # type: ignore[no-any-return]


def weighted_kmeans(x: FloatArray, w: FloatArray, k: int, rng: np.random.Generator, *, n_init: int = 3,
                    max_iter: int = 100) -> tuple[IntArray, FloatArray, float]:
    """Weighted k-means of points ``x`` (m, d) with weights ``w`` (m,) into ``1 <= k <= m``
    clusters (k-means++ seeding, Lloyd iterations), best of ``n_init``: labels (m,), centres
    (k, d) and the inertia (weighted sum of squared distances)."""
    m = x.shape[0]
    best: tuple[IntArray, FloatArray, float] | None = None
    for _ in range(n_init):
        centers = np.empty((k, x.shape[1]))
        centers[0] = x[rng.choice(m, p=w / w.sum())]
        d2 = _sq_dist(x, centers[:1])[:, 0]
        for c in range(1, k):
            p = w * d2
            idx = int(rng.choice(m, p=p / p.sum())) if p.sum() > 0 else int(rng.integers(m))
            centers[c] = x[idx]
            d2 = np.minimum(d2, _sq_dist(x, centers[c : c + 1])[:, 0])
        labels = np.zeros(m, dtype=np.int64)
        for it in range(max_iter):
            dist = _sq_dist(x, centers)
            new = np.argmin(dist, axis=1).astype(np.int64)
            if it > 0 and np.array_equal(new, labels):
                break
            labels = new
            wsum = np.bincount(labels, weights=w, minlength=k)
            centers = np.where(wsum[:, None] > 0, group_means(x, w, labels, k), centers)
            empty = np.flatnonzero(wsum == 0)
            if empty.size:
                # An empty cluster restarts at the point farthest from its centre.
                far = np.argsort(-w * dist[np.arange(m), labels])[: empty.size]
                centers[empty] = x[far]
        dist = _sq_dist(x, centers)
        labels = np.argmin(dist, axis=1).astype(np.int64)
        inertia = float(np.sum(w * dist[np.arange(m), labels]))
        if best is None or inertia < best[2]:
            best = (labels, centers.copy(), inertia)
    assert best is not None
    return best


def bic_score(x: FloatArray, w: FloatArray, labels: IntArray, centers: FloatArray) -> float:
    """BIC of a clustering under identical spherical Gaussians (Pelleg & Moore), weighted.

    ``l = Σ_c [R_c log R_c − R_c log R − R_c/2 log 2π − R_c d/2 log σ² − (R_c − K)/2]``,
    ``σ² = Σ w ||x − μ||² / (R − K)``, ``BIC = l − K(d+1)/2 · log R``.
    """
    k, d = centers.shape
    r = float(w.sum())
    rc = np.bincount(labels, weights=w, minlength=k)
    rc = rc[rc > 0]
    sse = float(np.sum(w * np.sum((x - centers[labels]) ** 2, axis=1)))
    sigma2 = max(sse / max(r - k, 1.0), 1e-12)
    ll = float(np.sum(rc * np.log(rc) - rc * np.log(r) - rc / 2 * np.log(2 * np.pi)
                      - rc * d / 2 * np.log(sigma2) - (rc - k) / 2))
    return ll - k * (d + 1) / 2 * np.log(r)


@SELECTORS.register("simpoint")
class SimPointSelector(BaseSelector):
    """SimPoint-style: k-means over standardised signatures, ``k`` chosen by BIC. With
    ``choose_k="bic"``, ``n_points`` is the largest ``k`` tried and the smallest ``k`` whose BIC
    reaches 90% of the range of scores is kept (``n_points_`` may be smaller); with ``"fixed"``,
    exactly ``min(n_points, n_unique)``. Each cluster is represented by the iteration whose
    signature is nearest its centroid, weighted by the cluster's iteration count. Each ``k`` takes
    the lowest-inertia k-means of ``n_init`` restarts, seeded (k-means++) by ``random_state``."""

    name = "simpoint"

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **BaseSelector._parameter_constraints, "choose_k": [Options(("bic", "fixed"))], "n_init": [Interval(int, 1)]}

    def __init__(self, *, n_points: int | None = 10, choose_k: str = "bic", n_init: int = 3,
                 random_state: int | None = 0) -> None:
        super().__init__(n_points=n_points, random_state=random_state)
        self.choose_k = choose_k
        self.n_init = n_init

    def fit(self, schedule: IterationSchedule) -> SimPointSelector:
        n = self._check_common(schedule)
        table = signature_table(schedule)
        w = table.counts.astype(np.float64)
        raw = table.signatures.astype(np.float64)
        mean = np.average(raw, axis=0, weights=w)
        std = np.sqrt(np.average((raw - mean) ** 2, axis=0, weights=w))
        varying = std > 0
        x = (raw[:, varying] - mean[varying]) / std[varying] if varying.any() else np.zeros((len(table), 1))
        k_max = min(int(self.n_points), len(table))  # type: ignore[arg-type]
        rng = self._rng()
        ks = range(1, k_max + 1) if self.choose_k == "bic" else [k_max]
        fits = {k: weighted_kmeans(x, w, k, rng, n_init=self.n_init) for k in ks}
        k_use = k_max
        if self.choose_k == "bic":
            scores = {k: bic_score(x, w, f[0], f[1]) for k, f in fits.items()}
            lo, hi = min(scores.values()), max(scores.values())
            k_use = min(k for k, s in scores.items() if s >= lo + 0.9 * (hi - lo))
            self.bic_ = scores
        labels_sig, centers, _ = fits[k_use]
        # Drop clusters that ended empty and relabel densely.
        used, labels_sig = np.unique(labels_sig, return_inverse=True)
        labels_sig, kk = labels_sig.reshape(-1), used.shape[0]
        d2 = np.sum((x - centers[used][labels_sig]) ** 2, axis=1)
        order = np.lexsort((np.arange(len(table)), -w, d2, labels_sig))
        reps = order[np.searchsorted(labels_sig[order], np.arange(kk), side="left")]
        weights = np.bincount(labels_sig, weights=w, minlength=kk).astype(np.float64)
        self._set_result(n, table.first_rows(reps.astype(np.int64)), weights, labels_sig[table.inverse])
        return self
