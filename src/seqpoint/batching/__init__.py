"""Stage 2: batching replay, turning per-sample lengths into the exact schedule of batches.

Every policy is a frozen keyword-only dataclass registered in :data:`POLICIES`; its
``replay(lengths, epochs=..., seed=...)`` returns an
:class:`~seqpoint.schedule.IterationSchedule`. Policies see lengths only and are
replayed with vectorised numpy, so 10 million samples take about a second.
``world_size=N`` gives a data-parallel schedule, every rank's batch of every step
(see :mod:`seqpoint.batching._ranks` for how each policy deals an epoch over ranks).
"""

from seqpoint.batching._base import (
    POLICIES,
    BatchingPolicy,
    BatchPlan,
    epoch_rng,
    epoch_seed,
    make_policy,
    replay,
)
from seqpoint.batching._bucketing import (
    BucketPolicy,
    DynamicBucketPolicy,
    estimate_duration_buckets,
    group_by_bucket,
)
from seqpoint.batching._group_by_length import GroupByLengthPolicy, length_grouped_indices
from seqpoint.batching._limits import (
    MAX_BATCH_SIZE,
    MAX_BUCKETS,
    MAX_DURATION,
    MAX_EPOCHS,
    MAX_REPLAY_SAMPLES,
    MAX_TOKENS,
    MAX_WORLD_SIZE,
    bounded,
)
from seqpoint.batching._packing import PackedRows, PackingPolicy, pack_rows
from seqpoint.batching._ranks import SHARD_MODES, deal_batches, resolve_shard, with_ranks
from seqpoint.batching._sampler import from_batch_sampler, rank_samplers
from seqpoint.batching._search import largest_fitting
from seqpoint.batching._simple import FixedPolicy, SortaGradPolicy, SortedPolicy
from seqpoint.batching._token_budget import TokenBudgetPolicy, batch_by_size

__all__ = [
    "MAX_BATCH_SIZE",
    "MAX_BUCKETS",
    "MAX_DURATION",
    "MAX_EPOCHS",
    "MAX_REPLAY_SAMPLES",
    "MAX_TOKENS",
    "MAX_WORLD_SIZE",
    "POLICIES",
    "SHARD_MODES",
    "BatchPlan",
    "BatchingPolicy",
    "BucketPolicy",
    "DynamicBucketPolicy",
    "FixedPolicy",
    "GroupByLengthPolicy",
    "PackedRows",
    "PackingPolicy",
    "SortaGradPolicy",
    "SortedPolicy",
    "TokenBudgetPolicy",
    "batch_by_size",
    "bounded",
    "deal_batches",
    "epoch_rng",
    "epoch_seed",
    "estimate_duration_buckets",
    "from_batch_sampler",
    "group_by_bucket",
    "largest_fitting",
    "length_grouped_indices",
    "make_policy",
    "pack_rows",
    "rank_samplers",
    "replay",
    "resolve_shard",
    "with_ranks",
]
