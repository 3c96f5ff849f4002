"""The SeqPoint selector: group iterations by cost, one weighted representative per group."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np
from numpy.typing import NDArray

from seqpoint._params import Constraint, Interval, Options
from seqpoint.exceptions import AdjustedInputWarning, ConfigError
from seqpoint.schedule import IterationSchedule, SignatureTable, signature_table
from seqpoint.selection._base import SELECTORS, BaseSelector
from seqpoint.selection._calibration import calibrate_weights
from seqpoint.selection._cost import (
    CostProxy,
    PilotTable,
    basis_components,
    basis_error,
    cost_proxy,
    describe_cost,
    evaluate_proxy,
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


class _Candidate(NamedTuple):
    """One grouping of the signatures into k groups, with its representatives."""

    groups: IntArray
    """Group of every unique signature."""
    reps: IntArray
    """Representative signature of every group."""
    error: float
    """Basis error of the count weights (see :func:`basis_error`)."""


@dataclass(frozen=True, eq=False)
class _Signatures:
    """The unique signatures of a run with what the selection needs of them."""

    table: SignatureTable
    proxy: FloatArray
    """Cost proxy of every signature."""
    counts: FloatArray
    """Iterations with every signature."""
    basis: FloatArray
    """Elementary cost components with a non-zero run total, shape ``(m, J)``."""
    totals: FloatArray
    """Run total of every kept component, shape ``(J,)``."""

    @classmethod
    def of(cls, schedule: IterationSchedule, proxy_fn: CostProxy, *, owner: str) -> _Signatures:
        table = signature_table(schedule)
        proxy = signature_proxy(proxy_fn, schedule, table, owner=owner)
        counts = table.counts.astype(np.float64)
        _, basis = basis_components(table.as_schedule())
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
    """Groups, representatives and basis error of the count weights for a given k.

    Signatures that vary in more than one column (batch size with length, source with
    target) can tie on the proxy yet cost differently: with ``refine``, a k-means in the
    space of the elementary cost components (seeded afresh for every k) proposes other
    groups, and the candidate with the smallest basis error wins.
    """

    def __init__(
        self,
        sigs: _Signatures,
        grouping: Grouping,
        *,
        refine: bool,
        rng: Callable[[], np.random.Generator],
    ) -> None:
        self.sigs = sigs
        self.grouping = grouping
        self.refine = refine
        self.rng = rng
        # Components relative to their mean per iteration, so every one weighs alike.
        self.z = sigs.basis / (sigs.totals / sigs.counts.sum())
        spread = np.ptp(self.z, axis=0) > 0
        # The per-iteration component is 1 everywhere: no information for clustering.
        self.z_feat = self.z[:, spread] if np.any(spread) else self.z

    def __call__(self, k: int) -> _Candidate:
        sigs = self.sigs
        g = self.grouping.groups(k)
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
        _, zk = np.unique(zk, return_inverse=True)
        zk = zk.reshape(-1).astype(np.int64)
        return zk, int(zk.max()) + 1


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
        sigs = _Signatures.of(schedule, proxy_fn, owner=type(self).__name__)
        grouping: Grouping
        if self.grouping == "optimal":
            grouping = OptimalGrouping(sigs.proxy, sigs.counts)
        else:
            grouping = SLBinGrouping(sigs.table.column("seq_len"), sigs.counts)
        varying = int(np.sum(np.ptp(sigs.table.signatures, axis=0) > 0))
        refine = self.grouping == "optimal" and varying > 1
        evaluate = _Evaluator(sigs, grouping, refine=refine, rng=self._rng)
        if self.n_points is not None:
            best = evaluate(self._capped_k(grouping))
        else:
            best = self._search(evaluate, grouping, refine=refine)
        weights, cal_err = self._weights(sigs, best)
        rows = sigs.table.first_rows(best.reps)
        labels = best.groups[sigs.table.inverse]
        self._set_result(len(schedule), rows, weights, labels, estimated_error=best.error)
        self.calibrated_error_ = cal_err
        self.proxy_values_ = sigs.proxy
        return self

    def _capped_k(self, grouping: Grouping) -> int:
        """``n_points``, lowered with a warning to the number of groups there can be."""
        assert self.n_points is not None
        k = int(self.n_points)
        if k > grouping.k_cap:
            warnings.warn(
                f"n_points={k} exceeds the schedule's {grouping.k_cap} {grouping.unit}; "
                f"using {grouping.k_cap} SeqPoints.",
                AdjustedInputWarning,
                stacklevel=3,
            )
            k = grouping.k_cap
        return k

    def _search(self, evaluate: _Evaluator, grouping: Grouping, *, refine: bool) -> _Candidate:
        """The smallest k whose basis error is at most ``max_error`` (else the best tried)."""
        assert self.max_error is not None
        target = float(self.max_error)
        tried: dict[int, _Candidate] = {}

        def attempt(k: int) -> bool:
            grouping.reserve(k)
            tried[k] = evaluate(k)
            return tried[k].error <= target

        found = smallest_k(attempt, grouping.k_cap, doubling=refine)
        best = tried[found] if found else min(tried.values(), key=lambda c: c.error)
        if best.error > self.max_error:
            warnings.warn(
                f"No k reaches max_error={self.max_error:g} with grouping={self.grouping!r}; "
                f"the best has estimated error {best.error:.3g} with {best.reps.shape[0]} SeqPoints. "
                "Use grouping='optimal' to reach any target.",
                AdjustedInputWarning,
                stacklevel=3,
            )
        return best

    def _weights(self, sigs: _Signatures, best: _Candidate) -> tuple[FloatArray, float]:
        """The returned weights and their basis error: calibrated counts when that helps.

        ``max_error`` chose k on the count weights, and ``estimated_error_`` stays their
        basis error whatever the weights: it measures how tight the groups are, which
        also bounds the within-group curvature that calibration cannot remove. The
        calibrated basis error is 0 by construction once k >= J, so it bounds nothing.
        """
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

    def _meta_diagnostics(self) -> dict[str, Any]:
        out = super()._meta_diagnostics()
        out["calibrated_error"] = float(self.calibrated_error_)
        return out

    def _meta_params(self) -> dict[str, Any]:
        out = super()._meta_params()
        out["cost"] = describe_cost(self.cost)
        return out
