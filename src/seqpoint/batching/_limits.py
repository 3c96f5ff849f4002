"""Upper bounds of batching parameters (int64 arithmetic, a laptop's memory), stated once."""

from __future__ import annotations

from seqpoint._params import Interval, Predicate, bounded
from seqpoint.traces import MAX_LENGTH

__all__ = ["BATCH_SIZE", "BUCKETS", "DURATION", "EPOCHS", "LENGTH", "MAX_BATCH_SIZE", "MAX_LENGTH",
           "MAX_REPLAY_SAMPLES", "TOKENS", "WORLD_SIZE", "bounded"]

#: Samples per batch (2^24); a batch of 16 million sequences is far past any real one.
MAX_BATCH_SIZE = 1 << 24
#: Samples times epochs of one replay (memory guard: ~8 bytes per index, a few arrays).
MAX_REPLAY_SAMPLES = 200_000_000

#: The constraints of the common parameters, as policies list them.
BATCH_SIZE = bounded(int, 1, MAX_BATCH_SIZE)
TOKENS = bounded(int, 1, 1 << 40)  # tokens per batch of a token budget
BUCKETS = bounded(int, 1, 100_000)  # length buckets: each holds an array, so a billion would exhaust memory
LENGTH = bounded(int, 1, MAX_LENGTH)
EPOCHS = bounded(int, 1, 10_000)  # passes over the data: the replay holds one index per sample and epoch
WORLD_SIZE = bounded(int, 1, 1 << 16)  # data-parallel ranks: the largest training jobs run tens of thousands
# Padded duration per batch, in length units (frames or tokens).
DURATION = Predicate(Interval(float, 0, 1e12, closed="right").accepts, "a number > 0 and <= 1e+12")
