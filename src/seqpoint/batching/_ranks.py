"""Data-parallel replay: every rank's batch of every step (``world_size`` rows per step, ranks in
order), dealt as real samplers deal them: ``samples`` as torch's ``DistributedSampler`` under a
``BatchSampler`` (:func:`deal_samples`), ``batches`` round-robin as accelerate's ``BatchSamplerShard``
(:func:`deal_batches`); docs/scaling.md tables both."""

from __future__ import annotations

import dataclasses

import numpy as np

from seqpoint._signature import IntArray
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.schedule import IterationSchedule

__all__ = ["SHARD_MODES", "deal_batches", "deal_samples", "resolve_shard", "with_ranks"]

#: How an epoch is split over ranks (see the module docstring).
SHARD_MODES: tuple[str, ...] = ("samples", "batches")

#: Policies that cut consecutive fixed-size batches from one sample order per epoch.
_SAMPLE_SHARDABLE = frozenset({"fixed", "sorted", "sortagrad", "group_by_length"})
#: Those whose usual distributed form is a DistributedSampler (a plain DataLoader).
_SAMPLES_BY_DEFAULT = frozenset({"fixed", "sorted", "sortagrad"})


def resolve_shard(policy: str, shard: str | None) -> str:
    """The shard mode of ``policy``: ``shard`` checked (a ConfigError), or the policy's default."""
    if shard is None:
        return "samples" if policy in _SAMPLES_BY_DEFAULT else "batches"
    if shard not in SHARD_MODES:
        raise ConfigError(f"The 'shard' parameter must be one of {', '.join(SHARD_MODES)}. Got {shard!r}.")
    if shard == "samples" and policy not in _SAMPLE_SHARDABLE:
        raise ConfigError("shard='samples' needs a policy that cuts fixed-size batches from one "
                          f"sample order ({', '.join(sorted(_SAMPLE_SHARDABLE))}); policy "
                          f"{policy!r} deals whole batches: use shard='batches'.")
    return shard


def deal_samples(order: IntArray, offsets: IntArray, epoch: IntArray, *, world_size: int, batch_size: int,
                 drop_last: bool) -> tuple[list[tuple[IntArray, IntArray, int]], list[int]]:
    """Deal every epoch's sample order (a plan without ``drop_last``) over ranks as
    ``DistributedSampler`` + ``BatchSampler``: per epoch ``(order, sizes, epoch)`` step-major,
    rank-minor, and the samples of each epoch no rank sees."""
    w, b = world_size, batch_size
    parts: list[tuple[IntArray, IntArray, int]] = []
    dropped: list[int] = []
    first_batch = np.searchsorted(epoch, np.unique(epoch))
    bounds = [*first_batch.tolist(), int(epoch.shape[0])]
    for j, e in enumerate(np.unique(epoch).tolist()):
        o = order[offsets[bounds[j]] : offsets[bounds[j + 1]]]
        n_e = int(o.shape[0])
        total = n_e // w * w if drop_last else -(-n_e // w) * w
        o = np.resize(o, total)  # cuts the tail, or repeats from the start as DistributedSampler pads
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
    """Deal a single-process schedule's batches round-robin over ranks, epoch by epoch;
    ``meta`` adds ``rank_padded_batches`` and ``rank_dropped_batches``."""
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
        raise InputError(f"Every epoch has fewer batches ({counts}) than the {w} ranks, and "
                         "drop_last drops them all; use fewer ranks or drop_last=False.")
    return with_ranks(single.take(sel), w, shard="batches", rank_padded_batches=padded, rank_dropped_batches=dropped)


def with_ranks(schedule: IterationSchedule, world_size: int, **meta: int | str) -> IterationSchedule:
    """Row ``i`` of ``schedule`` becomes step ``i // world_size`` of rank ``i % world_size``."""
    n = len(schedule)
    assert n % world_size == 0, "every step needs one row per rank"
    idx = np.arange(n, dtype=np.int64)
    labelled = dataclasses.replace(schedule, iteration=idx // world_size, rank=idx % world_size,
                                   meta={**schedule.meta, "world_size": int(world_size), **meta})
    return labelled.with_rows(schedule.rows)  # replace() does not carry the per-row lengths
