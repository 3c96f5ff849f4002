"""Replay of a user's own PyTorch batch sampler (indices only), one process or one per rank."""

from __future__ import annotations

import copy
import itertools
import numbers
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from seqpoint._params import Constraint, check_params
from seqpoint._signature import IntArray
from seqpoint.batching._base import BatchPlan, as_lengths, permute_batches
from seqpoint.batching._limits import EPOCHS, LENGTH
from seqpoint.batching._ranks import with_ranks
from seqpoint.exceptions import InputError
from seqpoint.schedule import IterationSchedule
from seqpoint.traces import Lengths

__all__ = ["from_batch_sampler", "rank_samplers"]

_SAMPLER_CONSTRAINTS: dict[str, list[Constraint]] = {"epochs": [EPOCHS], "pad_to_multiple_of": [LENGTH]}


def _is_batch(obj: object) -> bool:
    """True for one batch of indices (a list, tuple or 1-D array of ints, or empty)."""
    return getattr(obj, "ndim", None) == 1 or (isinstance(obj, Sequence) and not isinstance(obj, str)
                                               and (len(obj) == 0 or isinstance(obj[0], numbers.Integral)))


def rank_samplers(batch_sampler: Any, *, all_ranks: bool = False) -> list[Any]:
    """The per-rank batch samplers ``batch_sampler`` stands for: a list of samplers is one
    per rank; with ``all_ranks`` a batch sampler over a ``DistributedSampler`` is copied once
    per ``num_replicas`` rank; anything else is a single process."""
    if isinstance(batch_sampler, list | tuple) and batch_sampler and not any(_is_batch(x) for x in batch_sampler):
        return list(batch_sampler)
    inner = getattr(batch_sampler, "sampler", None) if all_ranks else None
    replicas = getattr(inner, "num_replicas", None)
    if isinstance(replicas, int) and replicas > 1 and isinstance(getattr(inner, "rank", None), int):
        ranks = []
        for r in range(replicas):
            s = copy.copy(inner)
            s.rank = r  # type: ignore[union-attr]
            b = copy.copy(batch_sampler)
            b.sampler = s
            ranks.append(b)
        return ranks
    return [batch_sampler]


def _epoch_batches(batch_sampler: Iterable[Iterable[int]], e: int, n: int, rank: str) -> tuple[IntArray, IntArray]:
    """One epoch of a sampler: its indices and batch sizes, checked against ``n`` samples."""
    batches = [b.tolist() if hasattr(b, "tolist") else list(b) for b in iter(batch_sampler)]
    size = np.fromiter((len(b) for b in batches), dtype=np.int64, count=len(batches))
    if size.shape[0] and size.min() == 0:
        raise InputError(f"The batch sampler{rank} yielded an empty batch (epoch {e}, batch "
                         f"{int(np.argmin(size))}); every batch needs at least one index.")
    order = np.fromiter(itertools.chain.from_iterable(batches), dtype=np.int64, count=int(size.sum()))
    if order.shape[0] and (order.min() < 0 or order.max() >= n):
        pos = int(np.flatnonzero((order < 0) | (order >= n))[0])
        batch = int(np.searchsorted(np.cumsum(size), pos, side="right"))
        raise InputError(f"The batch sampler{rank} yielded index {int(order[pos])} (epoch {e}, batch {batch}) but "
                         f"the lengths cover {n} samples (0..{n - 1}); give the lengths of the sampler's dataset.")
    return order, size


def _interleave(per_rank: list[tuple[IntArray, IntArray]], e: int) -> tuple[IntArray, IntArray]:
    """Join the ranks' batches of one epoch step-major, rank-minor."""
    counts = [s.shape[0] for _, s in per_rank]
    if len(set(counts)) != 1:
        raise InputError(f"The ranks' batch samplers yielded {counts} batches in epoch {e}; data-parallel ranks step "
                         "together, so every rank needs as many batches (pad or drop as DistributedSampler does).")
    step_major = np.arange(len(per_rank) * counts[0]).reshape(len(per_rank), -1).T.reshape(-1)
    order, sizes = (np.concatenate(parts) for parts in zip(*per_rank, strict=True))
    return permute_batches(order, sizes, step_major)


def from_batch_sampler(batch_sampler: Iterable[Iterable[int]], lengths: Lengths | ArrayLike, *, epochs: int = 1,
                       pad_to_multiple_of: int = 1, set_epoch: bool = True, all_ranks: bool = False
                       ) -> IterationSchedule:
    """Build the schedule by iterating a real batch sampler ``epochs`` times over sample indices: one row per
    yielded batch, ``meta["policy"] == "batch_sampler"``, padded lengths rounded up to a multiple of
    ``pad_to_multiple_of``. ``batch_sampler`` is anything that yields batches of dataset indices once per
    ``iter()`` (a ``torch.utils.data.BatchSampler``, a lhotse-style sampler of indices, a plain list of lists;
    torch is not needed), and ``lengths`` (Lengths or an array of shape (n_samples,)) covers every index it can
    yield. With ``set_epoch``, ``set_epoch(e)`` is called before each epoch on the sampler and on its
    ``.sampler`` where they have one (so ``DistributedSampler`` reshuffles). A data-parallel run is a list of
    per-rank batch samplers, or (with ``all_ranks``) one batch sampler over a ``DistributedSampler`` standing
    for all its ``num_replicas`` ranks (:func:`rank_samplers`): the schedule then has a ``rank`` column and
    ``world_size`` rows per iteration (rank ``r``'s ``i``-th batch of an epoch is its row of the epoch's
    ``i``-th step)."""
    lens = as_lengths(lengths)
    check_params("", _SAMPLER_CONSTRAINTS, {"epochs": epochs, "pad_to_multiple_of": pad_to_multiple_of})
    n = lens.n_samples
    samplers = rank_samplers(batch_sampler, all_ranks=all_ranks)
    w = len(samplers)

    def cut(e: int) -> tuple[IntArray, IntArray, int]:
        per_rank = []
        for r, sampler in enumerate(samplers):
            for obj in (sampler, getattr(sampler, "sampler", None)) if set_epoch else ():
                if callable(fn := getattr(obj, "set_epoch", None)):
                    fn(e)
            per_rank.append(_epoch_batches(sampler, e, n, f" of rank {r}" if w > 1 else ""))
        order, size = per_rank[0] if w == 1 else _interleave(per_rank, e)
        return order, size, n - int(np.unique(order).shape[0])  # samples the epoch never used

    plan = BatchPlan.per_epoch(epochs, cut)
    if plan.n_batches == 0:
        raise InputError("The batch sampler yielded no batch; check its dataset and batch size.")
    sched = plan.to_schedule(lens, pad_to_multiple_of=pad_to_multiple_of, policy="batch_sampler",
                             params={"sampler": type(samplers[0]).__name__}, epochs=epochs, seed=None)
    return sched if w == 1 else with_ranks(sched, w)
