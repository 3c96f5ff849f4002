from __future__ import annotations

import numpy as np
import pytest

from seqpoint.schedule import IterationSchedule


@pytest.fixture
def tiny() -> IterationSchedule:
    """Eight iterations, batch 1: seq_len 10 ×3, 20 ×2, 30 ×1, 100 ×2."""
    return IterationSchedule.from_columns(
        {"batch_size": np.ones(8, dtype=np.int64), "seq_len": [10, 10, 10, 20, 20, 30, 100, 100]}
    )


@pytest.fixture
def mixed() -> IterationSchedule:
    """A run whose batch size, source and target lengths all vary (token-budget style)."""
    rng = np.random.default_rng(7)
    n = 4000
    sl = rng.integers(5, 120, n)
    bs = np.maximum(1, 4000 // sl) // 8 * 8 + 8
    tl = (sl * rng.uniform(0.8, 1.3, n)).astype(np.int64)
    return IterationSchedule.from_columns({"batch_size": bs, "seq_len": sl, "tgt_len": tl})
