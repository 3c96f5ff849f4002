"""Shared machinery of batching policies: the registry, the plan, validation, seeding."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from seqpoint._config import to_dict
from seqpoint._params import Constraint, Validated, check_params
from seqpoint._registry import Registry
from seqpoint._signature import IntArray
from seqpoint.batching._limits import EPOCHS, MAX_LENGTH, MAX_REPLAY_SAMPLES, WORLD_SIZE, bounded
from seqpoint.batching._ranks import deal_batches, deal_samples, resolve_shard, with_ranks
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.schedule import IterationSchedule, RowLengths, round_up
from seqpoint.traces import Lengths, from_array

__all__ = ["POLICIES", "BatchPlan", "BatchingPolicy", "as_lengths", "epoch_rng", "epoch_seed", "make_policy",
           "replay"]


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    """Independent random stream of one epoch, derived from the run seed and the epoch."""
    return np.random.default_rng(np.random.SeedSequence([seed, epoch]))


def epoch_seed(seed: int, epoch: int) -> int:
    """A 63-bit integer seed for one epoch (for torch generators), derived like :func:`epoch_rng`."""
    return int(np.random.SeedSequence([seed, epoch]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def as_lengths(lengths: Lengths | ArrayLike) -> Lengths:
    """Accept a :class:`~seqpoint.traces.Lengths` or a plain array of source lengths."""
    return lengths if isinstance(lengths, Lengths) else from_array(lengths)


@dataclass(frozen=True, eq=False)
class BatchPlan:
    """Which samples form which batch, over all epochs, before shapes are computed: batch
    ``b`` is ``order[offsets[b]:offsets[b + 1]]`` of epoch ``epoch[b]``; ``dropped`` counts the
    samples left out of each epoch (int64 arrays)."""

    order: IntArray
    offsets: IntArray
    epoch: IntArray
    dropped: IntArray

    @property
    def n_batches(self) -> int:
        return int(self.epoch.shape[0])

    def batches(self) -> list[IntArray]:
        """All batches as a list of index arrays (for tests and small runs)."""
        return np.split(self.order, self.offsets[1:-1])

    def to_schedule(self, lens: Lengths, *, pad_to_multiple_of: int, policy: str, params: dict[str, Any],
                    epochs: int, seed: int | None) -> IterationSchedule:
        """The schedule of these batches over ``lens`` (padded lengths rounded up to a multiple of
        ``pad_to_multiple_of``), with :meth:`meta` as its provenance."""
        self.check_int64(lens, pad_to_multiple_of=pad_to_multiple_of)
        meta = self.meta(lens, policy=policy, params=params, epochs=epochs, seed=seed)
        starts = self.offsets[:-1]
        assert starts.size > 0 and np.all(np.diff(self.offsets) > 0), "batches must be non-empty"
        assert self.offsets[-1] == self.order.shape[0]
        src = lens.src[self.order]
        seq_len = round_up(np.maximum.reduceat(src, starts), pad_to_multiple_of)
        tokens, tgt_len = np.add.reduceat(src, starts), np.zeros_like(seq_len)
        if lens.tgt is not None:
            tgt = lens.tgt[self.order]
            tgt_len = round_up(np.maximum.reduceat(tgt, starts), pad_to_multiple_of)
            tokens = tokens + np.add.reduceat(tgt, starts)
        sched = IterationSchedule.from_columns(
            {"epoch": self.epoch, "batch_size": np.diff(self.offsets), "seq_len": seq_len, "tgt_len": tgt_len,
             "tokens": tokens, "sum_sq_len": np.add.reduceat(src * src, starts)}, meta)
        # Each row's real lengths, for workloads that build masks or varlen batches.
        return sched.with_rows(RowLengths.from_order(self.order, self.offsets, lens.src, lens.tgt))

    def meta(self, lens: Lengths, *, policy: str, params: dict[str, Any], epochs: int, seed: int | None
             ) -> dict[str, Any]:
        """Provenance of a replay (policy, params, epochs, seed, samples dropped, source)."""
        return {"policy": policy, "params": params, "epochs": int(epochs), "seed": None if seed is None else int(seed),
                "n_samples": lens.n_samples, "dropped": int(self.dropped.sum()),
                "dropped_per_epoch": [int(x) for x in self.dropped], "lengths_source": lens.source, "unit": lens.unit}

    def check_int64(self, lens: Lengths, *, pad_to_multiple_of: int) -> None:
        """Refuse batches whose ``padded_tokens`` or ``sum_sq_len`` would overflow int64."""
        if self.n_batches == 0:
            return
        sizes = np.diff(self.offsets).astype(np.float64)
        padded = float(max(lens.src.max(), 0 if lens.tgt is None else lens.tgt.max())) + pad_to_multiple_of
        if float(sizes.max()) * padded * padded < 2.0**62:
            return  # the cheap bound already holds
        src = lens.src[self.order].astype(np.float64)
        starts = self.offsets[:-1][sizes > 0]
        sq = np.add.reduceat(src * src, starts) if starts.size else np.zeros(1)
        worst = max(float(sq.max()), float(sizes.max()) * padded)
        if worst >= 2.0**62:
            raise InputError(f"{lens.source}: a batch would hold {worst:.3g} squared or padded tokens, past 64-bit "
                             f"counters (2^62); use smaller batches or shorter lengths (lengths <= {MAX_LENGTH:,}).")

    @staticmethod
    def per_epoch(epochs: int, cut: Callable[[int], tuple[IntArray, IntArray, int]]) -> BatchPlan:
        """The plan of ``cut(e) = (order, batch_sizes, dropped)`` for every epoch ``e``."""
        cuts = [cut(e) for e in range(epochs)]
        return BatchPlan.concat([(o, s, e) for e, (o, s, _) in enumerate(cuts)], [c[2] for c in cuts])

    @staticmethod
    def concat(parts: list[tuple[IntArray, IntArray, int]], dropped: list[int]) -> BatchPlan:
        """Join per-epoch ``(order, batch_sizes, epoch)`` pieces into one plan."""
        empty = np.zeros(0, dtype=np.int64)
        sizes = np.concatenate([p[1] for p in parts]) if parts else empty
        epoch = np.repeat(np.array([p[2] for p in parts], dtype=np.int64),
                          np.array([len(p[1]) for p in parts], dtype=np.int64))
        return BatchPlan(order=np.concatenate([p[0] for p in parts]).astype(np.int64, copy=False) if parts else empty,
                         offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), epoch=epoch,
                         dropped=np.asarray(dropped, dtype=np.int64))


_RUN_CONSTRAINTS: dict[str, list[Constraint]] = {"epochs": [EPOCHS], "seed": [bounded(int, 0, 2**63 - 1)],
                                                 "world_size": [WORLD_SIZE]}


class BatchingPolicy(Validated):
    """Base of batching policies (frozen keyword-only dataclasses over lengths): a subclass
    sets ``name`` and :meth:`plan`; :meth:`replay` turns the plan into a schedule."""

    name: ClassVar[str] = ""
    pad_to_multiple_of: int

    def to_dict(self) -> dict[str, Any]:
        """Parameters as plain data (what :func:`make_policy` takes back)."""
        return to_dict(self)

    def plan(self, lengths: Lengths, *, epochs: int = 1, seed: int = 0) -> BatchPlan:
        """Sample indices of every batch over ``epochs`` epochs (no shapes yet)."""
        raise NotImplementedError

    def replay(self, lengths: Lengths | ArrayLike, *, epochs: int = 1, seed: int = 0, world_size: int = 1,
               shard: str | None = None) -> IterationSchedule:
        """Replay the policy over ``lengths`` (Lengths or an array of shape (n_samples,), tokens or
        frames) and return the schedule of batch shapes: one row per batch, ``meta`` holding the
        policy, parameters, epochs, seed and the samples dropped. Each of the ``epochs`` passes
        draws its own random stream from the run ``seed`` (the same seed gives the identical
        schedule). Above one rank (``world_size``) the schedule has a ``rank`` column and
        ``world_size`` rows per iteration, dealt by ``shard``: ``samples`` (``DistributedSampler``,
        the default for ``fixed``, ``sorted``, ``sortagrad``) or ``batches`` (round-robin)."""
        lens = as_lengths(lengths)
        check_params("", _RUN_CONSTRAINTS, {"epochs": epochs, "seed": seed, "world_size": world_size})
        if (n := lens.n_samples) * epochs > MAX_REPLAY_SAMPLES:
            raise ConfigError(f"{epochs} epochs of {n:,} samples are {n * epochs:,} sample draws, more than the "
                              f"replay limit of {MAX_REPLAY_SAMPLES:,} (a memory guard); use fewer epochs (the "
                              "schedule of one epoch repeats its shape mix) or a subset of samples.")
        epochs, seed, world_size = int(epochs), int(seed), int(world_size)
        mode = resolve_shard(self.name, shard) if world_size > 1 else "single"
        if mode != "samples":
            single = self._replay_single(lens, epochs=epochs, seed=seed)
            drop_last = bool(getattr(self, "drop_last", False))
            return single if mode == "single" else deal_batches(single, world_size, drop_last=drop_last)
        # DistributedSampler pads or drops the epoch's whole sample order, so the policy's
        # own drop_last applies after the dealing, on each rank's stream.
        full = dataclasses.replace(self, drop_last=False).plan(lens, epochs=epochs, seed=seed)  # type: ignore[type-var]
        parts, dropped = deal_samples(full.order, full.offsets, full.epoch, world_size=world_size,
                                      batch_size=int(self.batch_size),  # type: ignore[attr-defined]
                                      drop_last=bool(self.drop_last))  # type: ignore[attr-defined]
        return with_ranks(self._schedule(BatchPlan.concat(parts, dropped), lens, epochs, seed), world_size, shard=mode)

    def _replay_single(self, lens: Lengths, *, epochs: int, seed: int) -> IterationSchedule:
        """The single-process schedule (what every policy's data-parallel replay deals)."""
        return self._schedule(self.plan(lens, epochs=epochs, seed=seed), lens, epochs, seed)

    def _schedule(self, plan: BatchPlan, lens: Lengths, epochs: int, seed: int) -> IterationSchedule:
        self._check_nonempty(plan, lens)
        return plan.to_schedule(lens, pad_to_multiple_of=self.pad_to_multiple_of, policy=self.name,
                                params=self.to_dict(), epochs=epochs, seed=seed)

    def _check_nonempty(self, plan: BatchPlan, lens: Lengths) -> None:
        if plan.n_batches == 0:
            raise InputError(f"Policy {self.name!r} produced no batch from {lens.n_samples} samples "
                             f"({lens.source}): every sample was dropped. Use a smaller batch or drop_last=False.")


class ConsecutivePolicy(BatchingPolicy):
    """A policy that cuts every epoch's sample order (:meth:`epoch_order`) into consecutive
    batches of ``batch_size``, the last one partial unless ``drop_last``."""

    batch_size: int
    drop_last: bool

    def epoch_order(self, lengths: Lengths, seed: int, epoch: int) -> IntArray:
        """The order in which epoch ``epoch`` consumes the samples."""
        raise NotImplementedError

    def plan(self, lengths: Lengths, *, epochs: int = 1, seed: int = 0) -> BatchPlan:
        return BatchPlan.per_epoch(epochs, lambda e: cut_consecutive(
            self.epoch_order(lengths, seed, e), self.batch_size, self.drop_last))


#: Every batching policy, by its short name (CLI ``--policy`` and TOML ``policy``).
POLICIES: Registry[type[BatchingPolicy]] = Registry("batching policy")


def make_policy(name: str, **params: Any) -> BatchingPolicy:
    """Build the policy registered as ``name`` from keyword parameters (unknown ones listed)."""
    cls = POLICIES.get(name)
    fields = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    unknown = sorted(set(params) - set(fields))
    if unknown:
        raise ConfigError(f"Policy {name!r} has no parameter {', '.join(map(repr, unknown))}. "
                          f"Its parameters: {', '.join(fields)}.")
    return cls(**params)


def replay(lengths: Lengths | ArrayLike, policy: str | BatchingPolicy = "fixed", *, epochs: int = 1, seed: int = 0,
           world_size: int = 1, shard: str | None = None, **params: Any) -> IterationSchedule:
    """Replay a batching policy given by name (plus parameters) or as an object
    (see :meth:`BatchingPolicy.replay`).

    >>> import numpy as np
    >>> from seqpoint.batching import replay
    >>> sched = replay(np.array([5, 3, 8, 2]), "sorted", batch_size=2)
    >>> sched.seq_len.tolist()
    [3, 8]
    """
    if isinstance(policy, BatchingPolicy):
        if params:
            raise ConfigError("Give parameters either in the policy object or as keywords, not "
                              f"both (got {', '.join(sorted(params))}).")
        pol = policy
    else:
        pol = make_policy(policy, **params)
    return pol.replay(lengths, epochs=epochs, seed=seed, world_size=world_size, shard=shard)


def cut_consecutive(order: IntArray, batch_size: int, drop_last: bool) -> tuple[IntArray, IntArray, int]:
    """Cut ``order`` into consecutive batches: ``(order, sizes, dropped)``, the final partial
    batch dropped from ``order`` when ``drop_last``."""
    full, rem = divmod(int(order.shape[0]), batch_size)
    sizes = np.full(full, batch_size, dtype=np.int64)
    if rem and not drop_last:
        return order, np.append(sizes, np.int64(rem)), 0
    return order[: full * batch_size], sizes, rem


def permute_batches(order: IntArray, sizes: IntArray, perm: IntArray) -> tuple[IntArray, IntArray]:
    """Reorder whole batches: batch ``k`` of the result is batch ``perm[k]`` of the input."""
    starts = np.cumsum(sizes) - sizes
    new_sizes = sizes[perm]
    shift = np.repeat(starts[perm] - (np.cumsum(new_sizes) - new_sizes), new_sizes)
    return order[np.arange(shift.shape[0], dtype=np.int64) + shift], new_sizes


def length_order(lens: Lengths, *, descending: bool = False) -> IntArray:
    """Indices sorted by source length, then target length, then index (stable)."""
    src = -lens.src if descending else lens.src
    if lens.tgt is None:
        return np.argsort(src, kind="stable").astype(np.int64)
    tgt = -lens.tgt if descending else lens.tgt
    return np.lexsort((tgt, src)).astype(np.int64)
