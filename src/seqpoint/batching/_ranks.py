"""Data-parallel replay: every rank's batch of every iteration, dealt as real samplers deal them.

A data-parallel run splits each epoch over ``world_size`` ranks; every step, each rank
trains on its own batch. Real pipelines split an epoch in one of two ways, and every
policy takes either (``shard=``); the default follows the framework the policy models:

``samples``: torch's ``DistributedSampler`` under a ``BatchSampler`` (the default of
    ``fixed``, ``sorted`` and ``sortagrad``, the policies of a plain ``DataLoader``).
    The policy's sample order of the epoch is padded by repeating it from its start to
    a multiple of ``world_size`` (or its tail dropped to one when the policy's
    ``drop_last`` is set, as ``DistributedSampler(drop_last=True)``), rank ``r`` takes
    ``order[r::world_size]`` and cuts it into consecutive batches of ``batch_size`` (the
    partial last one kept unless ``drop_last``). Only policies that cut consecutive
    fixed-size batches from a sample order take it (those and ``group_by_length``).
``batches``: accelerate's ``BatchSamplerShard(split_batches=False)`` (what the Hugging
    Face Trainer does), fairseq's sharded iterator and lhotse's samplers with
    ``world_size`` (the default of every other policy). The policy's batches of the epoch
    are dealt round-robin: batch ``b`` goes to rank ``b % world_size`` at step
    ``b // world_size``. An incomplete last round is dropped when the policy's
    ``drop_last`` is set, else filled with the epoch's first batches again (accelerate's
    ``even_batches=True``).

Either way every rank runs the same number of steps and, within an epoch, every sample
appears once across ranks (plus the padding repeats). The schedule has ``world_size``
rows per iteration, ranks ``0..world_size-1`` in order (:func:`with_ranks`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import ConfigError, InputError
from seqpoint.schedule import IterationSchedule

__all__ = ["SHARD_MODES", "deal_batches", "deal_samples", "resolve_shard", "with_ranks"]

IntArray = NDArray[np.int64]

#: How an epoch is split over ranks (see the module docstring).
SHARD_MODES: tuple[str, ...] = ("samples", "batches")

#: Policies that cut consecutive fixed-size batches from one sample order per epoch.
_SAMPLE_SHARDABLE = frozenset({"fixed", "sorted", "sortagrad", "group_by_length"})
#: Those whose usual distributed form is a DistributedSampler (a plain DataLoader).
_SAMPLES_BY_DEFAULT = frozenset({"fixed", "sorted", "sortagrad"})


def resolve_shard(policy: str, shard: str | None) -> str:
    """The shard mode of ``policy``: ``shard`` checked, or the policy's default.

    Raises
    ------
    ConfigError
        ``shard`` is not one of :data:`SHARD_MODES`, or ``samples`` for a policy whose
        batches are not consecutive fixed-size cuts of one sample order.
    """
    if shard is None:
        return "samples" if policy in _SAMPLES_BY_DEFAULT else "batches"
    if shard not in SHARD_MODES:
        raise ConfigError(f"The 'shard' parameter must be one of {', '.join(SHARD_MODES)}. Got {shard!r}.")
    if shard == "samples" and policy not in _SAMPLE_SHARDABLE:
        raise ConfigError(
            f"shard='samples' needs a policy that cuts fixed-size batches from one sample order "
            f"({', '.join(sorted(_SAMPLE_SHARDABLE))}); policy {policy!r} deals whole batches: "
            "use shard='batches'."
        )
    return shard


def deal_samples(
    order: IntArray, offsets: IntArray, epoch: IntArray, *, world_size: int, batch_size: int,
    drop_last: bool,
) -> tuple[list[tuple[IntArray, IntArray, int]], list[int]]:
    """Deal every epoch's sample order over ranks as ``DistributedSampler`` + ``BatchSampler``.

    Parameters
    ----------
    order, offsets, epoch : ndarray
        A plan of the policy without ``drop_last`` (its batches' concatenation per epoch
        is the epoch's full sample order), as in :class:`~seqpoint.batching.BatchPlan`.
    world_size, batch_size : int
        Ranks, and samples per batch on each rank.
    drop_last : bool
        Drop the epoch's tail beyond a multiple of ``world_size`` and each rank's partial
        last batch (else pad by repeating the order from its start, keep the partial batch).

    Returns
    -------
    parts : list of (order, sizes, epoch)
        Per epoch: sample indices and batch sizes in step-major, rank-minor order (batch
        ``i * world_size + r`` is rank ``r``'s batch of step ``i``).
    dropped : list of int
        Samples of each epoch that no rank sees.
    """
    w, b = world_size, batch_size
    parts: list[tuple[IntArray, IntArray, int]] = []
    dropped: list[int] = []
    first_batch = np.searchsorted(epoch, np.unique(epoch))
    bounds = [*first_batch.tolist(), int(epoch.shape[0])]
    for j, e in enumerate(np.unique(epoch).tolist()):
        o = order[offsets[bounds[j]] : offsets[bounds[j + 1]]]
        n_e = int(o.shape[0])
        if drop_last:
            total = n_e // w * w
            o = o[:total]
        else:
            total = -(-n_e // w) * w
            o = np.resize(o, total)  # repeats from the start, as DistributedSampler pads
        per_rank = total // w
        streams = o.reshape(per_rank, w).T  # row r is order[r::w]
        full, rem = divmod(per_rank, b)
        pieces = [streams[:, : full * b].reshape(w, full, b).transpose(1, 0, 2).reshape(-1)]
        sizes = [np.full(full * w, b, dtype=np.int64)]
        lost = n_e - total
        if rem and not drop_last:
            pieces.append(streams[:, full * b :].reshape(-1))
            sizes.append(np.full(w, rem, dtype=np.int64))
        elif rem:
            lost += rem * w
        parts.append((np.concatenate(pieces).astype(np.int64, copy=False), np.concatenate(sizes), int(e)))
        dropped.append(lost)
    return parts, dropped


def deal_batches(single: IterationSchedule, world_size: int, *, drop_last: bool) -> IterationSchedule:
    """Deal a single-process schedule's batches round-robin over ranks, epoch by epoch.

    Parameters
    ----------
    single : IterationSchedule
        The policy's global batch sequence (one row per batch, no rank column).
    world_size : int
        Ranks.
    drop_last : bool
        Drop an epoch's incomplete last round of batches; else fill it with the epoch's
        first batches again.

    Returns
    -------
    IterationSchedule
        ``world_size`` rows per iteration; ``meta`` adds ``rank_padded_batches`` and
        ``rank_dropped_batches``.

    Raises
    ------
    InputError
        Every epoch has fewer batches than ranks and ``drop_last`` drops them all.
    """
    w = world_size
    _, starts = np.unique(single.epoch, return_index=True)
    ends = [*starts[1:].tolist(), len(single)]
    rows: list[IntArray] = []
    padded = dropped = 0
    for start, end in zip(starts.tolist(), ends, strict=True):
        m = end - start
        rounds = m // w if drop_last else -(-m // w)
        rows.append(start + np.arange(rounds * w, dtype=np.int64) % m)
        padded += max(rounds * w - m, 0)
        dropped += max(m - rounds * w, 0)
    sel = np.concatenate(rows)
    if sel.shape[0] == 0:
        counts = ", ".join(str(e - s) for s, e in zip(starts.tolist(), ends, strict=True))
        raise InputError(
            f"Every epoch has fewer batches ({counts}) than the {w} ranks, and drop_last drops "
            "them all; use fewer ranks or drop_last=False."
        )
    dealt = single.take(sel)
    return with_ranks(dealt, w, shard="batches", rank_padded_batches=padded, rank_dropped_batches=dropped)


def with_ranks(schedule: IterationSchedule, world_size: int, **meta: Any) -> IterationSchedule:
    """Label the rows of ``schedule`` (step-major, rank-minor) with their step and rank.

    Row ``i`` becomes iteration ``i // world_size`` of rank ``i % world_size``; ``meta``
    gets ``world_size`` and the given keys.
    """
    n = len(schedule)
    assert n % world_size == 0, "every step needs one row per rank"
    idx = np.arange(n, dtype=np.int64)
    labelled = dataclasses.replace(
        schedule, iteration=idx // world_size, rank=idx % world_size,
        meta={**schedule.meta, "world_size": int(world_size), **meta},
    )
    return labelled.with_rows(schedule.rows)  # replace() does not carry the per-row lengths
