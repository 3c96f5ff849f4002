"""The fixtures the profiling tests share."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def one_thread() -> None:
    """One intra-op thread, so counts and timings do not depend on the machine's cores."""
    import torch

    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def ds2() -> Any:
    """The tiny DeepSpeech2 reference workload, built on one thread."""
    import torch

    from seqpoint.workloads import load_workload

    torch.set_num_threads(1)
    return load_workload("deepspeech2:tiny")
