"""Baseline selectors people use today (``first`` is torch.profiler's practice), with the SeqPoint
interface: ``k`` iterations extrapolated by ``n/k``, a typical signature times ``n``, or
stratified sampling with a confidence interval."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from seqpoint._params import Constraint, Interval
from seqpoint._signature import FloatArray, IntArray
from seqpoint.exceptions import ConfigError
from seqpoint.schedule import IterationSchedule, SignatureTable, signature_table
from seqpoint.selection._base import SELECTORS, BaseSelector
from seqpoint.selection._cost import CostProxy, PilotTable, cost_proxy, signature_proxy

__all__: list[str] = []  # the selectors are reached through SELECTORS


def _block_labels(n: int, k: int) -> IntArray:
    """Split ``0..n-1`` into ``k`` contiguous blocks of about ``n/k`` iterations."""
    return (np.arange(n, dtype=np.int64) * k) // n


@SELECTORS.register("first")
class FirstSelector(BaseSelector):
    """The first ``k = n_points`` iterations, each weighted ``n/k`` (today's profiler practice);
    ``labels_`` splits the run into ``k`` contiguous blocks of about ``n/k`` iterations.
    ``random_state`` is unused (deterministic), accepted for a uniform interface."""

    name = "first"

    def fit(self, schedule: IterationSchedule) -> FirstSelector:
        n, k = self._check_common(schedule), int(self.n_points)  # type: ignore[arg-type]
        return self._equal_weights(n, np.arange(k, dtype=np.int64), _block_labels(n, k))


@SELECTORS.register("stride")
class StrideSelector(BaseSelector):
    """Every ``n/k``-th iteration (the middle of ``k`` equal blocks), each weighted ``n/k``;
    parameters as for :class:`FirstSelector`."""

    name = "stride"

    def fit(self, schedule: IterationSchedule) -> StrideSelector:
        n, k = self._check_common(schedule), int(self.n_points)  # type: ignore[arg-type]
        rows = ((2 * np.arange(k, dtype=np.int64) + 1) * n) // (2 * k)
        return self._equal_weights(n, rows, _block_labels(n, k))


@SELECTORS.register("random")
class RandomSelector(BaseSelector):
    """``k`` distinct iterations drawn uniformly at random (seeded by ``random_state``), each
    weighted ``n/k``; ``labels_`` maps every iteration to the nearest drawn one."""

    name = "random"

    def fit(self, schedule: IterationSchedule) -> RandomSelector:
        n, k = self._check_common(schedule), int(self.n_points)  # type: ignore[arg-type]
        rows = np.sort(self._rng().choice(n, size=k, replace=False)).astype(np.int64)
        cuts = (rows[:-1] + rows[1:] + 1) // 2  # every iteration goes to the nearest drawn row
        labels = np.searchsorted(cuts, np.arange(n, dtype=np.int64), side="right").astype(np.int64)
        return self._equal_weights(n, rows, labels)


class _TypicalSignatureSelector(BaseSelector):
    """Up to ``k`` iterations of one typical signature, spread over the run, each weighted ``n/k``;
    ``labels_`` splits the run into contiguous blocks. Parameters as for :class:`FirstSelector`."""

    def _target(self, table: SignatureTable) -> int:
        raise NotImplementedError

    def fit(self, schedule: IterationSchedule) -> _TypicalSignatureSelector:
        n, k = self._check_common(schedule), int(self.n_points)  # type: ignore[arg-type]
        table = signature_table(schedule)
        rows_all = np.flatnonzero(table.inverse == self._target(table))
        pick = np.round(np.linspace(0, rows_all.shape[0] - 1, min(k, rows_all.shape[0])))
        rows = rows_all[np.unique(pick.astype(np.int64))]
        return self._equal_weights(n, rows, _block_labels(n, rows.shape[0]))


def _closest(table: SignatureTable, center: Callable[[IntArray], float]) -> int:
    """Signature with ``seq_len`` closest to its ``center`` over the iterations, then the other
    columns closest to theirs, then the commonest."""
    primary = np.abs(table.column("seq_len") - center(table.column("seq_len")))
    secondary = np.zeros(len(table))
    for name in ("batch_size", "tgt_len"):
        col = table.column(name).astype(np.float64)
        secondary += np.abs(col - center(table.column(name))) / (float(col.max() - col.min()) or 1.0)
    return int(np.lexsort((np.arange(len(table)), -table.counts, secondary, primary))[0])


@SELECTORS.register("mean")
class MeanSelector(_TypicalSignatureSelector):
    """Iterations of the signature whose ``seq_len`` is closest to the run's mean (ties:
    batch and target length closest to their means, then the commonest)."""

    name = "mean"

    def _target(self, table: SignatureTable) -> int:
        return _closest(table, lambda col: float(np.average(col, weights=table.counts.astype(np.float64))))


@SELECTORS.register("median")
class MedianSelector(_TypicalSignatureSelector):
    """Iterations at the median ``seq_len`` over iterations (ties as for ``mean``)."""

    name = "median"

    def _target(self, table: SignatureTable) -> int:
        def median(col: IntArray) -> float:
            order = np.argsort(col, kind="stable")
            cum = np.cumsum(table.counts[order])
            return float(col[order][min(int(np.searchsorted(cum, 0.5 * cum[-1])), order.shape[0] - 1)])

        return _closest(table, median)


@SELECTORS.register("mode")
class ModeSelector(_TypicalSignatureSelector):
    """Iterations at the most frequent ``seq_len`` (its commonest signature)."""

    name = "mode"

    def _target(self, table: SignatureTable) -> int:
        sl = table.column("seq_len")
        uniq, idx = np.unique(sl, return_inverse=True)
        per_sl = np.bincount(idx.reshape(-1), weights=table.counts)
        mode_sl = uniq[int(np.argmax(per_sl))]
        cand = np.flatnonzero(sl == mode_sl)
        return int(cand[np.argmax(table.counts[cand])])


@SELECTORS.register("stratified")
class StratifiedSelector(BaseSelector):
    """Stratified random sampling: signatures sorted by the cost proxy (``cost``, as for
    :class:`SeqPointSelector`) are cut into ``n_strata`` strata of about equal iteration counts
    (default ``max(1, k // 2)``, so most get two samples and a variance estimate); each gets one
    random iteration, the rest of the ``k = n_points`` samples go by Neyman allocation
    (``N_h · S_h``), each weighted ``N_h / n_h``. ``estimated_error_`` is the relative half-width
    of the 95% interval of the proxy total, ``1.96·sqrt(Σ N_h²(1 − n_h/N_h) S_h²/n_h) / T``."""

    name = "stratified"

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **BaseSelector._parameter_constraints, "n_strata": [None, Interval(int, 1)]}

    def __init__(self, *, n_points: int | None = 10, n_strata: int | None = None,
                 cost: str | CostProxy | PilotTable = "attention", random_state: int | None = 0) -> None:
        super().__init__(n_points=n_points, random_state=random_state)
        self.n_strata = n_strata
        self.cost = cost

    def fit(self, schedule: IterationSchedule) -> StratifiedSelector:
        n, k = self._check_common(schedule), int(self.n_points)  # type: ignore[arg-type]
        if self.n_strata is not None and self.n_strata > k:
            raise ConfigError("The 'n_strata' parameter of StratifiedSelector must be <= n_points "
                              f"({k}). Got {self.n_strata}.")
        h_req = self.n_strata if self.n_strata is not None else max(1, k // 2)
        owner, table = type(self).__name__, signature_table(schedule)
        proxy = signature_proxy(cost_proxy(self.cost, owner=owner), schedule, table, owner=owner)
        counts = table.counts.astype(np.float64)
        order = np.lexsort((np.arange(len(table)), proxy))
        before = np.concatenate([[0.0], np.cumsum(counts[order])[:-1]])
        raw = np.floor(before * h_req / n).astype(np.int64)
        _, dense = np.unique(raw, return_inverse=True)
        stratum_sig = np.empty(len(table), dtype=np.int64)
        stratum_sig[order] = dense.reshape(-1)
        h = int(stratum_sig.max()) + 1
        size = np.bincount(stratum_sig, weights=counts, minlength=h)
        mean = np.bincount(stratum_sig, weights=counts * proxy, minlength=h) / size
        ss = np.bincount(stratum_sig, weights=counts * (proxy - mean[stratum_sig]) ** 2, minlength=h)
        var = np.where(size > 1, ss / np.maximum(size - 1, 1), 0.0)
        alloc = _neyman(size.astype(np.int64), np.sqrt(var), k)

        stratum_iter = stratum_sig[table.inverse]
        rng = self._rng()
        rows: list[IntArray] = []
        labels = np.empty(n, dtype=np.int64)
        for s, offset in enumerate(np.cumsum(alloc) - alloc):
            members = np.flatnonzero(stratum_iter == s)
            rows.append(members[np.sort(rng.choice(members.shape[0], size=alloc[s], replace=False))])
            labels[members] = offset + _block_labels(members.shape[0], int(alloc[s]))
        total = float(np.dot(counts, proxy))
        variance = float(np.sum(size**2 * (1 - alloc / size) * var / alloc))
        err = 1.96 * np.sqrt(variance) / total if total > 0 else 0.0
        # A stratum's iterations are its size, each sample standing for an equal share.
        self._set_result(n, np.concatenate(rows), np.repeat(size / alloc, alloc), labels, estimated_error=err)
        self.n_strata_ = h
        return self


def _neyman(size: IntArray, spread: FloatArray, k: int) -> IntArray:
    """``k`` samples: one per stratum, the rest by ``size · spread``, none past its size."""
    h = size.shape[0]
    alloc = np.ones(h, dtype=np.int64)
    left = k - h
    while left > 0:
        room = size - alloc
        score = np.where(room > 0, size * spread, 0.0)
        if not np.any(score > 0):
            score = np.where(room > 0, size.astype(np.float64), 0.0)
        share = score / score.sum() * left
        add = np.minimum(np.floor(share).astype(np.int64), room)
        if add.sum() == 0:
            # Largest remainder: one more sample for the stratum with the largest share.
            add[int(np.argmax(np.where(room > 0, share, -1.0)))] = 1
        alloc += add
        left -= int(add.sum())
    return alloc
