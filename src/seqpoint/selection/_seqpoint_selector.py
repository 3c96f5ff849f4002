"""The SeqPoint selector: group iterations by cost, one weighted representative per group."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from seqpoint._params import Constraint, Interval, Options
from seqpoint._signature import FloatArray, IntArray
from seqpoint.exceptions import AdjustedInputWarning
from seqpoint.schedule import IterationSchedule, SignatureTable, signature_table
from seqpoint.selection._base import SELECTORS, BaseSelector
from seqpoint.selection._calibration import calibrate_weights
from seqpoint.selection._cost import (
    CostProxy,
    PilotTable,
    SignatureCosts,
    basis_components,
    basis_error,
    cost_proxy,
    signature_proxy,
)
from seqpoint.selection._grouping import (
    MAX_REFINE_K,
    Grouping,
    OptimalGrouping,
    SLBinGrouping,
    choose_representatives,
    nearest_centroid,
    smallest_k,
)
from seqpoint.selection._simpoint import weighted_kmeans

__all__ = ["SeqPointSelector"]


class _Candidate(NamedTuple):
    """Group of every unique signature, each group's representative, the count weights' error."""

    groups: IntArray
    reps: IntArray
    error: float


@dataclass(frozen=True, eq=False)
class _Signatures:
    """The unique signatures of a run with what the selection needs of them."""

    table: SignatureTable
    proxy: FloatArray
    counts: FloatArray
    basis: FloatArray
    """Elementary cost components with a non-zero run total, shape ``(m, J)``."""
    totals: FloatArray

    @classmethod
    def of(cls, schedule: IterationSchedule, proxy_fn: CostProxy, *, owner: str) -> _Signatures:
        table = signature_table(schedule)
        proxy = signature_proxy(proxy_fn, schedule, table, owner=owner)
        counts = table.counts.astype(np.float64)
        _, basis = basis_components(table.as_schedule())
        exact = proxy_fn.base if isinstance(proxy_fn, PilotTable) else proxy_fn
        if isinstance(exact, SignatureCosts) and exact.components:
            # The model's exact costs are components too: the formula basis only
            # approximates them (a convolution rounds lengths, GNMT's attention is b·s·t).
            basis = np.hstack([basis, exact.component_values(table.signatures)])
        totals = counts @ basis
        keep = totals > 0
        return cls(table, proxy, counts, basis[:, keep], totals[keep])

    def count_weights(self, groups: IntArray, k: int) -> FloatArray:
        """Iterations in every group: the SeqPoint paper's weights."""
        return np.bincount(groups, weights=self.counts, minlength=k).astype(np.float64)

    def bound(self, groups: IntArray, reps: IntArray, k: int) -> float:
        """Basis error of the count weights of ``groups`` on representatives ``reps``."""
        return basis_error(self.count_weights(groups, k), self.basis[reps], self.totals)


class _Evaluator:
    """Groups, representatives and basis error of the count weights for a given k. With
    ``refine`` (signatures varying in several columns can tie on the proxy yet cost
    differently), a k-means in component space proposes other groups; the lowest error wins."""

    def __init__(self, sigs: _Signatures, grouping: Grouping, *, refine: bool,
                 rng: Callable[[], np.random.Generator]) -> None:
        self.sigs, self.grouping, self.refine, self.rng = sigs, grouping, refine, rng
        # Components relative to their mean per iteration, so every one weighs alike.
        self.z = sigs.basis / (sigs.totals / sigs.counts.sum())
        spread = np.ptp(self.z, axis=0) > 0
        # The per-iteration component is 1 everywhere: no information for clustering.
        self.z_feat = self.z[:, spread] if np.any(spread) else self.z

    def __call__(self, k: int) -> _Candidate:
        sigs, g = self.sigs, self.grouping.groups(k)
        reps = choose_representatives(g, k, sigs.proxy, sigs.counts, sigs.basis)
        best = _Candidate(g, reps, sigs.bound(g, reps, k))
        if self.refine and 1 < k <= MAX_REFINE_K and best.error > 0:
            for cand_g, kk in ((g, k), self._component_groups(k)):
                cand_r = nearest_centroid(self.z, sigs.counts, cand_g, kk)
                err = sigs.bound(cand_g, cand_r, kk)
                if err < best.error:
                    best = _Candidate(cand_g, cand_r, err)
        return best

    def _component_groups(self, k: int) -> tuple[IntArray, int]:
        """k-means groups in component space (empty clusters dropped) and their number."""
        zk, _, _ = weighted_kmeans(self.z_feat, self.sigs.counts, k, self.rng(), n_init=2, max_iter=60)
        used, zk = np.unique(zk, return_inverse=True)
        return zk.reshape(-1).astype(np.int64), len(used)


@SELECTORS.register("seqpoint")
class SeqPointSelector(BaseSelector):
    """Choose SeqPoints: group iterations by a cost proxy, one weighted representative per group.

    The unique signatures, with their counts, are grouped on the proxy ``cost`` (a name in
    ``COST_MODELS``, default ``attention``; a callable ``f(schedule) -> ndarray of shape
    (n_iterations,)``; or a :class:`PilotTable`) by an optimal weighted 1-D k-means
    (``grouping="optimal"``) or the SeqPoint paper's equal-width ``seq_len`` bins (``"sl_bins"``),
    into ``k = n_points`` groups or the fewest whose ``estimated_error_`` is at most ``max_error``
    (a fraction in (0, 1); exactly one of the two). A group's representative is the real iteration
    whose proxy times the group's count is closest to the group's proxy total; ``random_state``
    seeds the k-means that refines groups of signatures varying in several columns.

    ``estimated_error_`` (no measurement needed) is the worst relative error of the *count*
    weights (the paper's) on the elementary costs of :func:`basis_components`: a bound on any
    non-negative mix of them, by which :func:`seqpoint.projection.project` widens its interval.
    ``weights="calibrated"`` (the default, when ``k`` is at least the number of components) adjusts
    the counts as little as possible until every component's run total is reproduced (still
    summing to n, >= 0); ``"counts"`` keeps them. Also fitted: ``calibrated_error_``, the basis
    error of ``weights_`` (``<= estimated_error_``), and ``proxy_values_`` (n_unique,).
    """

    name = "seqpoint"

    def __init__(self, *, n_points: int | None = None, max_error: float | None = None, grouping: str = "optimal",
                 cost: str | CostProxy | PilotTable = "attention", weights: str = "calibrated",
                 random_state: int | None = 0) -> None:
        super().__init__(n_points=n_points, random_state=random_state)
        self.max_error = max_error
        self.grouping = grouping
        self.cost = cost
        self.weights = weights

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **BaseSelector._parameter_constraints,
        "max_error": [Interval(float, 0, 1, closed="neither", note="a fraction: 0.001 is 0.1%")],
        "grouping": [Options(("optimal", "sl_bins"))], "weights": [Options(("calibrated", "counts"))]}
    _one_of: ClassVar[tuple[str, ...]] = ("n_points", "max_error")

    def fit(self, schedule: IterationSchedule) -> SeqPointSelector:
        self._check_common(schedule)
        owner = type(self).__name__
        sigs = _Signatures.of(schedule, cost_proxy(self.cost, owner=owner), owner=owner)
        grouping: Grouping = (OptimalGrouping(sigs.proxy, sigs.counts) if self.grouping == "optimal"
                              else SLBinGrouping(sigs.table.column("seq_len"), sigs.counts))
        varying = int(np.sum(np.ptp(sigs.table.signatures, axis=0) > 0))
        refine = self.grouping == "optimal" and varying > 1
        evaluate = _Evaluator(sigs, grouping, refine=refine, rng=self._rng)
        best = (evaluate(self._capped_k(grouping)) if self.n_points is not None
                else self._search(evaluate, grouping, refine=refine))
        weights, self.calibrated_error_ = self._weights(sigs, best)
        self._set_result(len(schedule), sigs.table.first_rows(best.reps), weights,
                         best.groups[sigs.table.inverse], estimated_error=best.error)
        self.proxy_values_ = sigs.proxy
        return self

    def _capped_k(self, grouping: Grouping) -> int:
        """``n_points``, lowered with a warning to the number of groups there can be."""
        k = int(self.n_points)  # type: ignore[arg-type]
        if k > grouping.k_cap:
            warnings.warn(f"n_points={k} exceeds the schedule's {grouping.k_cap} {grouping.unit}; "
                          f"using {grouping.k_cap} SeqPoints.", AdjustedInputWarning, stacklevel=3)
        return min(k, grouping.k_cap)

    def _search(self, evaluate: _Evaluator, grouping: Grouping, *, refine: bool) -> _Candidate:
        """The smallest k whose basis error is at most ``max_error`` (else the best tried)."""
        target = float(self.max_error)  # type: ignore[arg-type]
        tried: dict[int, _Candidate] = {}

        def attempt(k: int) -> bool:
            grouping.reserve(k)
            tried[k] = evaluate(k)
            return tried[k].error <= target

        found = smallest_k(attempt, grouping.k_cap, doubling=refine)
        best = tried[found] if found else min(tried.values(), key=lambda c: c.error)
        if best.error > target:
            warnings.warn(f"No k reaches max_error={self.max_error:g} with grouping={self.grouping!r}; the best has "
                          f"estimated error {best.error:.3g} with {best.reps.shape[0]} SeqPoints. Use "
                          "grouping='optimal' to reach any target.", AdjustedInputWarning, stacklevel=3)
        return best

    def _weights(self, sigs: _Signatures, best: _Candidate) -> tuple[FloatArray, float]:
        """The returned weights and their basis error: calibrated counts when that helps."""
        k = int(best.reps.shape[0])
        weights = sigs.count_weights(best.groups, k)
        err = best.error
        if self.weights == "calibrated" and k >= sigs.basis.shape[1] and err > 0:
            at_reps = sigs.basis[best.reps]
            cal = calibrate_weights(at_reps, weights, sigs.totals)
            cand = basis_error(cal, at_reps, sigs.totals)
            # A component no weights can reach (every point has the usual batch size, a
            # few last batches do not) keeps its miss: the bound is then unchanged while
            # the other components become exact, so ties (to rounding) go to calibration.
            if cand <= err * (1 + 1e-9):
                return cal, min(cand, err)
        return weights, err

    def _meta_diagnostics(self) -> dict[str, float]:
        return {**super()._meta_diagnostics(), "calibrated_error": float(self.calibrated_error_)}
