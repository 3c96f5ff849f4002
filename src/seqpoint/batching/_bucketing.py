"""Length-bucketed policies: GNMT/MLPerf ``bucket`` and lhotse-like ``dynamic_bucket``."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from seqpoint._params import Boolean, Constraint
from seqpoint._signature import IntArray
from seqpoint.batching._base import POLICIES, BatchingPolicy, BatchPlan, epoch_rng, permute_batches
from seqpoint.batching._limits import BATCH_SIZE, BUCKETS, DURATION, LENGTH
from seqpoint.batching._search import chase, largest_fitting
from seqpoint.exceptions import AdjustedInputWarning, ConfigError, InputError
from seqpoint.traces import Lengths

__all__ = ["BucketPolicy", "DynamicBucketPolicy", "estimate_duration_buckets", "group_by_bucket"]


def group_by_bucket(rng: np.random.Generator, bucket: IntArray) -> tuple[IntArray, IntArray]:
    """A random order grouped by bucket (ascending), shuffled within each bucket; and counts."""
    perm = rng.permutation(bucket.shape[0]).astype(np.int64)
    keys = bucket[perm]
    if keys.max(initial=0) < 2**15:
        keys = keys.astype(np.int16)  # numpy's stable sort is a radix sort for 16-bit keys
    order = perm[np.argsort(keys, kind="stable")]
    return order, bucket[order]


@POLICIES.register("bucket")
@dataclass(frozen=True, kw_only=True)
class BucketPolicy(BatchingPolicy):
    """GNMT bucketing as in the MLPerf Training reference (``BucketingSampler``): a sample's bucket is
    ``max(src, tgt) // ceil(max_len / num_buckets)``, clamped to the last; every epoch each bucket is shuffled
    and cut into batches (its remainder dropped, as MLPerf does), and the batches are shuffled globally."""

    name: ClassVar[str] = "bucket"

    batch_size: int = 128
    """Samples per batch (MLPerf GNMT's global batch size)."""
    num_buckets: int = 5
    """Number of equal-width length buckets (MLPerf GNMT default: 5)."""
    max_len: int | None = None
    """Length that the buckets span (MLPerf: the data set's max length); default the longest sample."""
    drop_last: bool = True
    """Drop each bucket's final partial batch every epoch (MLPerf behaviour)."""
    pad_to_multiple_of: int = 1
    """Padded lengths are rounded up to a multiple of this."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "batch_size": [BATCH_SIZE], "num_buckets": [BUCKETS], "max_len": [LENGTH, None], "drop_last": [Boolean()],
        "pad_to_multiple_of": [LENGTH]}

    def bucket_ids(self, lengths: Lengths) -> IntArray:
        """Bucket of every sample."""
        max_len = self.max_len if self.max_len is not None else int(lengths.num_tokens().max())
        width = -(-max_len // self.num_buckets)
        ids = lengths.src // width
        if lengths.tgt is not None:
            ids = np.maximum(ids, lengths.tgt // width)
        return np.clip(ids, 0, self.num_buckets - 1).astype(np.int64)

    def plan(self, lengths: Lengths, *, epochs: int = 1, seed: int = 0) -> BatchPlan:
        bucket = self.bucket_ids(lengths)
        counts = np.bincount(bucket, minlength=self.num_buckets).astype(np.int64)
        full, rem = np.divmod(counts, self.batch_size)
        keep_rem = np.zeros_like(rem) if self.drop_last else rem
        # Per bucket: `full` batches of batch_size, then maybe one of `keep_rem`.
        per_bucket = np.stack([np.full_like(rem, self.batch_size), keep_rem], axis=1).ravel()
        sizes = np.repeat(per_bucket, np.stack([full, keep_rem > 0], axis=1).ravel())
        # Positions (in the bucket-grouped order) that survive the per-bucket truncation.
        within = np.arange(lengths.n_samples) - np.repeat(np.cumsum(counts) - counts, counts)
        keep_pos = np.flatnonzero(within < np.repeat(counts - (rem - keep_rem), counts))
        dropped = int(lengths.n_samples - keep_pos.shape[0])

        def cut(e: int) -> tuple[IntArray, IntArray, int]:
            rng = epoch_rng(seed, e)
            order, _ = group_by_bucket(rng, bucket)
            return (*permute_batches(order[keep_pos], sizes, rng.permutation(sizes.shape[0])), dropped)

        return BatchPlan.per_epoch(epochs, cut)


def estimate_duration_buckets(sizes: IntArray, num_buckets: int) -> IntArray:
    """Bucket boundaries (at most ``num_buckets - 1``) of about equal total duration, as
    lhotse's ``estimate_duration_buckets``; size ``d`` goes to ``searchsorted(bins, d, "right")``."""
    srt = np.sort(sizes)
    target = float(srt.sum()) / num_buckets
    prefix = np.concatenate(([0], np.cumsum(srt)))
    bins: list[int] = []
    # First i with sum(srt[s:i]) > target: a new bucket starts at srt[i].
    i = int(np.searchsorted(prefix, target, side="right"))
    while i < srt.shape[0]:
        bins.append(int(srt[i]))
        i = int(np.searchsorted(prefix, prefix[i] + target, side="right"))
    return np.asarray(bins, dtype=np.int64)


@POLICIES.register("dynamic_bucket")
@dataclass(frozen=True, kw_only=True)
class DynamicBucketPolicy(BatchingPolicy):
    """Duration-budget batches within length buckets, like lhotse's ``DynamicBucketingSampler``: buckets of
    equal total duration (``estimate_duration_buckets``), batches from one bucket in arrival order, closed once
    one more sample of the longest length would exceed ``max_duration`` (``(n + 1) * longest``) or at
    ``max_cuts``. Unlike lhotse's finite shuffle buffer, each epoch is a full permutation and the batches are
    shuffled uniformly. Lengths and ``max_duration`` share one unit (frames: 100 per second)."""

    name: ClassVar[str] = "dynamic_bucket"

    max_duration: float | None = None
    """Padded duration budget per batch, in the lengths' unit (e.g. 20000 frames = 200 s)."""
    max_cuts: int | None = None
    """Most samples per batch (lhotse ``max_cuts``); at least one of the two limits is needed."""
    num_buckets: int = 10
    """Buckets of about equal total duration (lhotse 1.33 `DynamicBucketingSampler` default: 10)."""
    drop_last: bool = False
    """Drop each bucket's final partial batch every epoch."""
    pad_to_multiple_of: int = 1
    """Padded lengths are rounded up to a multiple of this."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "max_duration": [DURATION, None], "max_cuts": [BATCH_SIZE, None], "num_buckets": [BUCKETS],
        "drop_last": [Boolean()], "pad_to_multiple_of": [LENGTH]}

    def _check(self) -> None:
        if self.max_duration is None and self.max_cuts is None:
            raise ConfigError("DynamicBucketPolicy needs 'max_duration' (CLI: --max-duration) "
                              "and/or 'max_cuts'.")

    def plan(self, lengths: Lengths, *, epochs: int = 1, seed: int = 0) -> BatchPlan:
        dur, n = lengths.src, lengths.n_samples
        if self.num_buckets > 1 and self.num_buckets > n:
            raise InputError(f"num_buckets={self.num_buckets} exceeds the {n} samples of "
                             f"{lengths.source}; use fewer buckets.")
        bins = estimate_duration_buckets(dur, self.num_buckets) if self.num_buckets > 1 else np.zeros(0, np.int64)
        bucket = np.searchsorted(bins, dur, side="right").astype(np.int64)
        budget = None if self.max_duration is None else int(np.floor(self.max_duration))
        if budget is not None:
            too_long = int((dur > budget).sum())
            if too_long:
                warnings.warn(f"{too_long} sample(s) of {lengths.source} are longer than max_duration="
                              f"{self.max_duration:g}; each forms a batch of one above the budget (lhotse warns "
                              "likewise).", AdjustedInputWarning, stacklevel=4)
        bucket_max = np.zeros(int(bucket.max()) + 1, dtype=np.int64)
        np.maximum.at(bucket_max, bucket, dur)
        cap = n if self.max_cuts is None else self.max_cuts

        def cut(e: int) -> tuple[IntArray, IntArray, int]:
            rng = epoch_rng(seed, e)
            order, b_sorted = group_by_bucket(rng, bucket)
            # Samples left in the bucket from every position on.
            left = np.searchsorted(b_sorted, b_sorted, side="right").astype(np.int64) - np.arange(n)
            g = left
            if budget is not None:
                # Every count below budget // (bucket maximum) fits: start the search there.
                lower = budget // bucket_max[b_sorted] - 1
                g = largest_fitting(dur[order], left, budget, extra=1, lower=lower)
            size = np.minimum(np.minimum(g + 1, cap), left)
            starts = chase(size)
            sizes = size[starts]
            full = ((g + 1 <= left) | (cap <= left))[starts]  # closed by a limit, not the bucket's end
            if not self.drop_last:
                return (*permute_batches(order, sizes, rng.permutation(sizes.shape[0])), 0)
            perm = rng.permutation(int(full.sum()))
            return (*permute_batches(order[np.repeat(full, sizes)], sizes[full], perm), int(sizes[~full].sum()))

        return BatchPlan.per_epoch(epochs, cut)
