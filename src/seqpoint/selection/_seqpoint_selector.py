"""The SeqPoint selector: group iterations by cost, one weighted representative per group."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from seqpoint._params import Constraint, Interval, Options
from seqpoint.exceptions import AdjustedInputWarning, ConfigError
from seqpoint.schedule import IterationSchedule
from seqpoint.selection._base import SELECTORS, BaseSelector
from seqpoint.selection._calibration import calibrate_weights
from seqpoint.selection._cost import (
    CostProxy,
    PilotTable,
    basis_components,
    cost_proxy,
    evaluate_proxy,
)
from seqpoint.selection._kmeans1d import KMeans1D
from seqpoint.selection._signatures import SignatureTable, signature_table
from seqpoint.selection._simpoint import weighted_kmeans

__all__ = ["SeqPointSelector", "signature_proxy"]

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

GROUPINGS = ("optimal", "sl_bins")
WEIGHTINGS = ("calibrated", "counts")


def signature_proxy(
    proxy: CostProxy, schedule: IterationSchedule, table: SignatureTable, *, owner: str
) -> FloatArray:
    """Proxy value of every unique signature, shape ``(n_unique,)``.

    Proxies that depend on the signature only are evaluated once per signature; any
    other callable is evaluated on the whole schedule and averaged per signature.
    """
    if getattr(proxy, "per_signature", False):
        return evaluate_proxy(proxy, table.as_schedule(), owner=owner)
    full = evaluate_proxy(proxy, schedule, owner=owner)
    return np.bincount(table.inverse, weights=full, minlength=len(table)) / table.counts


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


@SELECTORS.register("seqpoint")
class SeqPointSelector(BaseSelector):
    """Choose SeqPoints: group iterations by a cost proxy, one weighted representative per group.

    The schedule is collapsed to its unique signatures ``(batch_size, seq_len, tgt_len
    [, sum_sq_len])`` with counts. Signatures are grouped on the cost proxy, either by
    an optimal weighted 1-D k-means (``grouping="optimal"``, a Ckmeans dynamic
    programme minimising the within-group proxy variance, which is the second-order
    projection error) or by equal-width ``seq_len`` bins as in the SeqPoint paper
    (``grouping="sl_bins"``). Each group's representative is a real iteration whose
    signature's proxy times the group's iteration count is closest to the group's proxy
    total; its weight is the group's iteration count, calibrated by default (below).

    Multi-dimensional signatures: the proxy combines all signature columns (tokens,
    attention term, target length), so iterations of equal proxy but different shape
    share a group only when their proxies agree; among equally good representatives the
    one with the group's typical shape is kept. ``estimated_error_`` is the worst
    relative projection error of the *count* weights over a basis of elementary costs
    (per iteration, per sequence, per token, attention, sequential steps), computed
    exactly without any measurement: it bounds the count weights' error on any cost that
    is a non-negative combination of them, and a group that mixes batch sizes raises it,
    so ``max_error`` adds points until such groups are split.

    Calibrated weights (``weights="calibrated"``, the default): a group's count weighs its
    representative right only to first order, and one real signature can rarely match
    the group's mean tokens, attention term, batch size and steps at once. Since the
    run totals of those components are known, the counts are then adjusted as little as
    possible (raking, see :func:`calibrate_weights`) until the weighted points reproduce
    every component's total; any cost linear in them is then projected exactly, and
    only its curvature within the groups remains. This needs at least as many points as
    components (``k >= J``, ``J`` at most 5); with fewer, or when calibrating would not
    lower the basis error, the counts are kept. ``labels_`` are the groups either way.

    Calibration makes the basis error of the weights it returns (``calibrated_error_``)
    0 by construction once ``k >= J``, so that figure says nothing about a real cost
    (in 101 of the paper table's 140 case × k it was 0 while the exact FLOPs were
    projected up to 0.54% off). ``estimated_error_`` therefore stays
    the count weights' basis error, an upper-bound-style estimate: calibrated weights
    are usually more accurate than it says, rarely less (their residual is the cost's
    curvature within the groups, which tight groups keep small). It is what
    ``max_error`` compares with and what :func:`seqpoint.projection.project` widens its
    interval by.

    Parameters
    ----------
    n_points : int or None
        Number of SeqPoints ``k`` (>= 1). Exactly one of ``n_points`` and ``max_error``.
    max_error : float or None
        Target relative error in (0, 1): the smallest ``k`` whose ``estimated_error_`` is at
        most this is used.
    grouping : {"optimal", "sl_bins"}
        How signatures are grouped.
    cost : str, callable or PilotTable
        Cost proxy: a name in ``COST_MODELS`` (default ``attention``), a callable
        ``f(schedule) -> ndarray of shape (n_iterations,)`` or a :class:`PilotTable`.
    weights : {"calibrated", "counts"}
        ``counts``: every point weighs its group's iteration count (the SeqPoint paper).
        ``calibrated``: the counts adjusted to reproduce the run totals of the basis
        components (see above); they still sum to ``n_iterations`` and are >= 0.
    random_state : int or None
        Accepted for a uniform interface; the selection is deterministic.

    Fitted attributes (besides those of :class:`BaseSelector`)
    -----------------------------------------------------------
    estimated_error_ : float
        Worst relative basis error of the count weights (fraction, >= 0); recorded as
        ``SeqPoints.meta["estimated_error"]``.
    calibrated_error_ : float
        Worst relative basis error of the returned ``weights_`` (fraction,
        ``<= estimated_error_``); equal to ``estimated_error_`` when the counts are
        kept. Recorded as ``SeqPoints.meta["calibrated_error"]``.
    proxy_values_ : ndarray of shape (n_unique,)
        Cost proxy of every unique signature.
    """

    name = "seqpoint"

    def __init__(
        self,
        *,
        n_points: int | None = None,
        max_error: float | None = None,
        grouping: str = "optimal",
        cost: str | CostProxy | PilotTable = "attention",
        weights: str = "calibrated",
        random_state: int | None = 0,
    ) -> None:
        super().__init__(n_points=n_points, random_state=random_state)
        self.max_error = max_error
        self.grouping = grouping
        self.cost = cost
        self.weights = weights

    # ------------------------------------------------------------------ validation
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **BaseSelector._parameter_constraints,
        "max_error": [Interval(float, 0, 1, closed="neither", note="a fraction: 0.001 is 0.1%")],
        "grouping": [Options(GROUPINGS)],
        "weights": [Options(WEIGHTINGS)],
    }
    _one_of: ClassVar[tuple[str, ...]] = ("n_points", "max_error")

    def _validate(self, schedule: IterationSchedule) -> CostProxy:
        cls = type(self).__name__
        if (self.n_points is None) == (self.max_error is None):
            got = "both" if self.n_points is not None else "neither"
            raise ConfigError(
                f"{cls} needs exactly one of 'n_points' and 'max_error'. Got {got}."
            )
        self._check_common(schedule)
        return cost_proxy(self.cost, owner=cls)

    # ------------------------------------------------------------------ fitting
    def fit(self, schedule: IterationSchedule) -> SeqPointSelector:
        """Choose SeqPoints for ``schedule``; returns ``self``."""
        proxy_fn = self._validate(schedule)
        table = signature_table(schedule)
        proxy = signature_proxy(proxy_fn, schedule, table, owner=type(self).__name__)
        counts = table.counts.astype(np.float64)
        _, basis = basis_components(table.as_schedule())
        totals = counts @ basis
        keep = totals > 0
        basis, totals = basis[:, keep], totals[keep]
        m = len(table)

        if self.grouping == "optimal":
            order = np.lexsort((np.arange(m), proxy))
            km = KMeans1D(proxy[order], counts[order])

            def groups_for(k: int) -> IntArray:
                bounds = km.bounds(k)
                g = np.empty(m, dtype=np.int64)
                g[order] = np.repeat(np.arange(k), np.diff(bounds))
                return g

            k_cap = m
        else:
            sl = table.column("seq_len")
            uniq_sl, sl_idx = np.unique(sl, return_inverse=True)
            sl_idx = sl_idx.reshape(-1)
            sl_counts = np.bincount(sl_idx, weights=counts).astype(np.float64)

            binner = _SLBinner(uniq_sl, sl_counts)

            def groups_for(k: int) -> IntArray:
                return binner(k)[sl_idx]

            k_cap = int(uniq_sl.shape[0])

        def bound(g: IntArray, reps: IntArray, k: int) -> float:
            wsum = np.bincount(g, weights=counts, minlength=k)
            projected = wsum @ basis[reps]
            return float(np.max(np.abs(projected - totals) / totals)) if totals.size else 0.0

        # Signatures that vary in more than one column (batch size with length, source
        # with target) can tie on the proxy yet cost differently: refine those groups in
        # the space of the elementary cost components.
        varying = int(np.sum(np.ptp(table.signatures, axis=0) > 0))
        z = basis / (totals / counts.sum())
        # The per-iteration component is 1 everywhere: no information for clustering.
        z_feat = z[:, np.ptp(z, axis=0) > 0] if np.any(np.ptp(z, axis=0) > 0) else z
        refine = self.grouping == "optimal" and varying > 1

        def evaluate(k: int) -> tuple[IntArray, IntArray, float]:
            g = groups_for(k)
            reps = choose_representatives(g, k, proxy, counts, basis)
            best = (g, reps, bound(g, reps, k))
            if refine and 1 < k <= _MAX_REFINE_K and best[2] > 0:
                # k-means in component space (seeded): groups tight in every component.
                zk, _, _ = weighted_kmeans(z_feat, counts, k, self._rng(), n_init=2, max_iter=60)
                _, zk = np.unique(zk, return_inverse=True)
                zk = zk.reshape(-1).astype(np.int64)
                kz = int(zk.max()) + 1
                for cand_g, kk in ((g, k), (zk, kz)):
                    cand_r = _nearest_centroid(z, counts, cand_g, kk)
                    err = bound(cand_g, cand_r, kk)
                    if err < best[2]:
                        best = (cand_g, cand_r, err)
            return best

        if self.n_points is not None:
            k = int(self.n_points)
            if k > k_cap:
                what = "unique signatures" if self.grouping == "optimal" else "distinct seq_len values"
                warnings.warn(
                    f"n_points={k} exceeds the schedule's {k_cap} {what}; using {k_cap} SeqPoints.",
                    AdjustedInputWarning,
                    stacklevel=2,
                )
                k = k_cap
            g, reps, err = evaluate(k)
        else:
            assert self.max_error is not None
            tried: dict[int, tuple[IntArray, IntArray, float]] = {}
            target = float(self.max_error)

            def attempt(k: int) -> bool:
                if self.grouping == "optimal" and k > km.max_k:
                    km.extend(min(k_cap, max(k, 2 * km.max_k)))
                tried[k] = evaluate(k)
                return tried[k][2] <= target

            found = _smallest_k(attempt, k_cap, doubling=refine)
            best = tried[found] if found else min(tried.values(), key=lambda c: c[2])
            assert best is not None
            g, reps, err = best
            if err > self.max_error:
                warnings.warn(
                    f"No k reaches max_error={self.max_error:g} with grouping={self.grouping!r}; "
                    f"the best has estimated error {err:.3g} with {reps.shape[0]} SeqPoints. "
                    "Use grouping='optimal' to reach any target.",
                    AdjustedInputWarning,
                    stacklevel=2,
                )
        k = int(reps.shape[0])
        weights = np.bincount(g, weights=counts, minlength=k).astype(np.float64)
        # ``max_error`` chose k on the count weights, and ``estimated_error_`` stays their
        # basis error whatever the weights: it measures how tight the groups are, which
        # also bounds the within-group curvature that calibration cannot remove. The
        # calibrated basis error is 0 by construction once k >= J, so it bounds nothing.
        cal_err = err
        if self.weights == "calibrated" and k >= basis.shape[1] and err > 0:
            cal = calibrate_weights(basis[reps], weights, totals)
            cand = float(np.max(np.abs(cal @ basis[reps] - totals) / totals))
            # A component no weights can reach (every point has the usual batch size, a
            # few last batches do not) keeps its miss: the bound is then unchanged while
            # the other components become exact, so ties (to rounding) go to calibration.
            if cand <= err * (1 + 1e-9):
                weights, cal_err = cal, min(cand, err)
        rows = table.first_rows(reps)
        labels = g[table.inverse]
        self._set_result(len(schedule), rows, weights, labels, estimated_error=err)
        self.calibrated_error_ = cal_err
        self.proxy_values_ = proxy
        return self

    def _meta_diagnostics(self) -> dict[str, Any]:
        out = super()._meta_diagnostics()
        out["calibrated_error"] = float(self.calibrated_error_)
        return out

    def _meta_params(self) -> dict[str, Any]:
        from seqpoint.selection._cost import describe_cost

        out = super()._meta_params()
        out["cost"] = describe_cost(self.cost)
        return out


_MAX_REFINE_K = 64


def _smallest_k(attempt: Callable[[int], bool], k_cap: int, *, doubling: bool) -> int:
    """Smallest k in 1..k_cap for which ``attempt(k)`` holds (0 if none).

    Without refinement every k is tried in order (one DP layer and one O(m) pass each).
    With refinement a k-means runs per k, so k = 1, 2, 4, ..., 64 are tried, then the
    gap below the first success is bisected (the bound falls with k almost always);
    beyond 64 no refinement runs and k is scanned in order.
    """
    if not doubling:
        return next((k for k in range(1, k_cap + 1) if attempt(k)), 0)
    fail, k = 0, 1
    while k <= min(k_cap, _MAX_REFINE_K):
        if attempt(k):
            while k - fail > 1:
                mid = (fail + k) // 2
                if attempt(mid):
                    k = mid
                else:
                    fail = mid
            return k
        fail, k = k, 2 * k
    start = min(k_cap, _MAX_REFINE_K) + 1
    return next((k for k in range(start, k_cap + 1) if attempt(k)), 0)


def _centroids(z: FloatArray, w: FloatArray, g: IntArray, k: int) -> FloatArray:
    wsum = np.bincount(g, weights=w, minlength=k)
    cols = [np.bincount(g, weights=w * z[:, j], minlength=k) for j in range(z.shape[1])]
    return np.stack(cols, axis=1) / np.maximum(wsum, 1e-300)[:, None]  # type: ignore[no-any-return]


def _nearest_centroid(z: FloatArray, w: FloatArray, g: IntArray, k: int) -> IntArray:
    """Per group, the signature nearest the group's weighted centroid in component space."""
    c = _centroids(z, w, g, k)
    d = np.sum((z - c[g]) ** 2, axis=1)
    order = np.lexsort((np.arange(g.shape[0]), -w, d, g))
    return order[np.searchsorted(g[order], np.arange(k), side="left")].astype(np.int64)


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
