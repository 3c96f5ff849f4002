"""Fixed-size batching policies: shuffled (``fixed``), ``sorted`` and DeepSpeech2's ``sortagrad``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from seqpoint._params import Boolean, Constraint, Interval, Options
from seqpoint._signature import IntArray
from seqpoint.batching._base import (
    POLICIES,
    BatchingPolicy,
    BatchPlan,
    ConsecutivePolicy,
    cut_consecutive,
    epoch_rng,
    length_order,
    permute_batches,
)
from seqpoint.batching._limits import BATCH_SIZE, LENGTH
from seqpoint.traces import Lengths

__all__ = ["FixedPolicy", "SortaGradPolicy", "SortedPolicy"]


@POLICIES.register("fixed")
@dataclass(frozen=True, kw_only=True)
class FixedPolicy(ConsecutivePolicy):
    """Fixed batch size over a fresh random permutation every epoch, drawn from the epoch's own
    stream and cut into consecutive batches: PyTorch's ``DataLoader(shuffle=True, batch_size=B)``."""

    name: ClassVar[str] = "fixed"

    batch_size: int = 32
    """Samples per batch."""
    drop_last: bool = False
    """Drop the final partial batch of every epoch (reported in ``meta['dropped']``)."""
    shuffle: bool = True
    """Shuffle every epoch; False keeps file order (``SequentialSampler``)."""
    pad_to_multiple_of: int = 1
    """Padded lengths are rounded up to a multiple of this (tensor-core friendly shapes)."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "batch_size": [BATCH_SIZE], "drop_last": [Boolean()], "shuffle": [Boolean()], "pad_to_multiple_of": [LENGTH]}

    def epoch_order(self, lengths: Lengths, seed: int, epoch: int) -> IntArray:
        n = lengths.n_samples
        return (epoch_rng(seed, epoch).permutation(n) if self.shuffle else np.arange(n)).astype(np.int64)


@POLICIES.register("sorted")
@dataclass(frozen=True, kw_only=True)
class SortedPolicy(BatchingPolicy):
    """Consecutive batches of the data sorted by length, the same every epoch; ties broken by
    target length, then by sample index (stable), so it needs no seed."""

    name: ClassVar[str] = "sorted"

    batch_size: int = 32
    """Samples per batch."""
    descending: bool = False
    """Longest first (finds out-of-memory shapes at once) instead of shortest first."""
    drop_last: bool = False
    """Drop the final partial batch of every epoch."""
    pad_to_multiple_of: int = 1
    """Padded lengths are rounded up to a multiple of this."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "batch_size": [BATCH_SIZE], "descending": [Boolean()], "drop_last": [Boolean()],
        "pad_to_multiple_of": [LENGTH]}

    def plan(self, lengths: Lengths, *, epochs: int = 1, seed: int = 0) -> BatchPlan:
        order = length_order(lengths, descending=self.descending)
        cut = cut_consecutive(order, self.batch_size, self.drop_last)
        return BatchPlan.per_epoch(epochs, lambda e: cut)  # the same batches every epoch


@POLICIES.register("sortagrad")
@dataclass(frozen=True, kw_only=True)
class SortaGradPolicy(BatchingPolicy):
    """DeepSpeech2's SortaGrad: the first epoch in increasing length, later epochs shuffled.
    Batches are consecutive chunks of the data sorted by length (ascending); in epochs
    ``>= sorted_epochs`` the default ``shuffle="batches"`` shuffles their order, as deepspeech.pytorch's
    ``DSRandomSampler`` does (the paper: "training reverts back to a random order over
    minibatches"), and ``shuffle="samples"`` reshuffles samples instead (a ``fixed`` epoch)."""

    name: ClassVar[str] = "sortagrad"

    batch_size: int = 32
    """Samples per batch."""
    sorted_epochs: int = 1
    """Leading epochs iterated in increasing length (DeepSpeech2: 1)."""
    shuffle: str = "batches"
    """Later epochs: 'batches' (permute the length-sorted batches) or 'samples'."""
    drop_last: bool = False
    """Drop the final partial batch of every epoch."""
    pad_to_multiple_of: int = 1
    """Padded lengths are rounded up to a multiple of this."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "batch_size": [BATCH_SIZE], "sorted_epochs": [Interval(int, 0)], "shuffle": [Options(("batches", "samples"))],
        "drop_last": [Boolean()], "pad_to_multiple_of": [LENGTH]}

    def plan(self, lengths: Lengths, *, epochs: int = 1, seed: int = 0) -> BatchPlan:
        n = lengths.n_samples
        s_order, s_sizes, s_drop = cut_consecutive(length_order(lengths), self.batch_size, self.drop_last)

        def cut(e: int) -> tuple[IntArray, IntArray, int]:
            if e < self.sorted_epochs:
                return s_order, s_sizes, s_drop
            rng = epoch_rng(seed, e)
            if self.shuffle == "batches":
                return (*permute_batches(s_order, s_sizes, rng.permutation(s_sizes.shape[0])), s_drop)
            return cut_consecutive(rng.permutation(n).astype(np.int64), self.batch_size, self.drop_last)

        return BatchPlan.per_epoch(epochs, cut)
