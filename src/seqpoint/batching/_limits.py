"""Upper bounds of batching parameters (int64 arithmetic, a laptop's memory), stated once."""

from __future__ import annotations

from seqpoint._params import Interval, Predicate, bounded
from seqpoint.traces import MAX_LENGTH

__all__ = ["BATCH_SIZE", "BUCKETS", "DURATION", "EPOCHS", "LENGTH", "MAX_BATCH_SIZE", "MAX_BUCKETS", "MAX_DURATION",
           "MAX_EPOCHS", "MAX_LENGTH", "MAX_REPLAY_SAMPLES", "MAX_TOKENS", "MAX_WORLD_SIZE", "TOKENS", "WORLD_SIZE",
           "bounded"]

#: Samples per batch (2^24); a batch of 16 million sequences is far past any real one.
MAX_BATCH_SIZE = 1 << 24
#: Tokens per batch of a token budget (2^40).
MAX_TOKENS = 1 << 40
#: Padded duration per batch, in length units (frames or tokens).
MAX_DURATION = 1e12
#: Length buckets; each holds an array, so a billion would exhaust memory.
MAX_BUCKETS = 100_000
#: Passes over the data; the replay holds one index per sample and epoch.
MAX_EPOCHS = 10_000
#: Data-parallel ranks (2^16); the largest training jobs run tens of thousands.
MAX_WORLD_SIZE = 1 << 16
#: Samples times epochs of one replay (memory guard: ~8 bytes per index, a few arrays).
MAX_REPLAY_SAMPLES = 200_000_000

#: The constraints of the common parameters, as policies list them.
BATCH_SIZE = bounded(int, 1, MAX_BATCH_SIZE)
TOKENS = bounded(int, 1, MAX_TOKENS)
BUCKETS = bounded(int, 1, MAX_BUCKETS)
LENGTH = bounded(int, 1, MAX_LENGTH)
EPOCHS = bounded(int, 1, MAX_EPOCHS)
WORLD_SIZE = bounded(int, 1, MAX_WORLD_SIZE)
DURATION = Predicate(Interval(float, 0, MAX_DURATION, closed="right").accepts,
                     f"a number > 0 and <= {MAX_DURATION:g}")
