"""Stage 2: batching replay, turning per-sample lengths into the exact schedule of batches.
Every policy is a frozen keyword-only dataclass registered in :data:`POLICIES`; its
``replay(lengths, epochs=..., seed=..., world_size=...)`` returns an IterationSchedule, replayed
with vectorised numpy over lengths only (10 million samples in about a second; docs/scaling.md
for data-parallel replay). The libraries' internals imported ``as`` themselves are for the tests."""

# Importing a policy's module registers it in POLICIES, where make_policy and replay find it.
from seqpoint.batching import _simple  # noqa: F401
from seqpoint.batching._base import (
    POLICIES,
    BatchingPolicy,
    BatchPlan,
    epoch_rng,
    make_policy,
    replay,
)
from seqpoint.batching._bucketing import estimate_duration_buckets as estimate_duration_buckets
from seqpoint.batching._bucketing import group_by_bucket as group_by_bucket
from seqpoint.batching._group_by_length import length_grouped_indices as length_grouped_indices
from seqpoint.batching._packing import pack_rows as pack_rows
from seqpoint.batching._ranks import resolve_shard
from seqpoint.batching._sampler import from_batch_sampler
from seqpoint.batching._search import largest_fitting as largest_fitting
from seqpoint.batching._token_budget import batch_by_size as batch_by_size

__all__ = ["POLICIES", "BatchPlan", "BatchingPolicy", "epoch_rng", "from_batch_sampler", "make_policy", "replay",
           "resolve_shard"]
