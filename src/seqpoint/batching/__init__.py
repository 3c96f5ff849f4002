"""Stage 2: batching replay, turning per-sample lengths into the exact schedule of batches.

Every policy is a frozen keyword-only dataclass registered in :data:`POLICIES`; its
``replay(lengths, epochs=..., seed=...)`` returns an
:class:`~seqpoint.schedule.IterationSchedule`. Policies see lengths only and are
replayed with vectorised numpy, so 10 million samples take about a second.
``world_size=N`` gives a data-parallel schedule, every rank's batch of every step
(docs/scaling.md says how each policy deals an epoch over ranks).
"""

# Importing a policy's module registers it in POLICIES, where make_policy and replay find it.
from seqpoint.batching import _simple  # noqa: F401
from seqpoint.batching._base import (
    POLICIES,
    BatchingPolicy,
    epoch_rng,
    epoch_seed,
    make_policy,
    replay,
)
from seqpoint.batching._bucketing import estimate_duration_buckets, group_by_bucket
from seqpoint.batching._group_by_length import length_grouped_indices
from seqpoint.batching._packing import pack_rows
from seqpoint.batching._sampler import from_batch_sampler
from seqpoint.batching._search import largest_fitting
from seqpoint.batching._token_budget import batch_by_size

__all__ = [
    "POLICIES",
    "BatchingPolicy",
    "batch_by_size",
    "epoch_rng",
    "epoch_seed",
    "estimate_duration_buckets",
    "from_batch_sampler",
    "group_by_bucket",
    "largest_fitting",
    "length_grouped_indices",
    "make_policy",
    "pack_rows",
    "replay",
]
