from __future__ import annotations

import pytest

from seqpoint.schedule import IterationSchedule
from seqpoint.testing import toy_schedule, varied_schedule


@pytest.fixture
def tiny() -> IterationSchedule:
    """Eight iterations, batch 1: seq_len 10 ×3, 20 ×2, 30 ×1, 100 ×2."""
    return toy_schedule()


@pytest.fixture
def mixed() -> IterationSchedule:
    """A run whose batch size, source and target lengths all vary (token-budget style)."""
    return varied_schedule()
