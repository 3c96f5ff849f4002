"""How a newcomer adds a batching policy (docs/architecture.md, "Adding to seqpoint"): a frozen
keyword-only dataclass over BatchingPolicy whose ``plan`` returns each epoch's sample order and
batch sizes; ``replay`` does the rest (shapes, padding, data-parallel shards, provenance). In
seqpoint it also gets ``@POLICIES.register("name")`` and an import in batching/__init__.py, which
makes ``policy = "name"`` work in the TOML and on the command line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from seqpoint.batching import BatchingPolicy, BatchPlan, replay
from seqpoint.traces import Lengths


@dataclass(frozen=True, kw_only=True)
class LongestFirstPolicy(BatchingPolicy):
    """The longest samples first, in batches of ``batch_size``: a job that meets its out-of-memory
    shape in the first step."""

    name: ClassVar[str] = "longest_first"
    batch_size: int = 2
    pad_to_multiple_of: int = 1  # every policy pads its shapes up to a multiple of this

    def plan(self, lengths: Lengths, *, epochs: int = 1, seed: int = 0) -> BatchPlan:
        order = np.argsort(-lengths.src, kind="stable")
        full, rest = divmod(lengths.n_samples, self.batch_size)
        sizes = np.array([self.batch_size] * full + ([rest] if rest else []), dtype=np.int64)
        return BatchPlan.per_epoch(epochs, lambda epoch: (order, sizes, 0))


def test_a_new_policy_replays_through_the_shared_machinery() -> None:
    schedule = replay([5, 9, 3, 7, 2], LongestFirstPolicy(batch_size=2), epochs=2)
    assert schedule.seq_len.tolist() == [9, 5, 2] * 2
    assert schedule.batch_size.tolist() == [2, 2, 1] * 2
    assert schedule.meta["policy"] == "longest_first" and schedule.meta["params"]["batch_size"] == 2
    ranks = replay([5, 9, 3, 7, 2, 4], LongestFirstPolicy(batch_size=2), world_size=3)
    # a policy of its own deals whole batches round-robin: one iteration, a row per rank
    assert ranks.seq_len.tolist() == [9, 5, 3] and ranks.rank.tolist() == [0, 1, 2] and ranks.n_steps == 1
