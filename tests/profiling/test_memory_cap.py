"""Issue 13: a point that cannot fit is recorded as ``oom`` without allocating."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torch")

from seqpoint.profiling import ProfileConfig, profile_points
from seqpoint.workloads import load_workload


def test_point_past_the_memory_is_refused_and_the_campaign_goes_on() -> None:
    wl = load_workload("deepspeech2:tiny", {"threads": 1})
    ms = profile_points(
        wl, [(2, 40, 0), (1 << 24, 1 << 16, 0)], ProfileConfig(warmup=0, repeats=1), progress=False
    )
    ok, big = ms.measurements
    assert ok.status == "ok"
    assert big.status == "oom"
    assert "counted on the meta device" in (big.message or "")
    assert "GiB free on cpu" in (big.message or "")


@pytest.mark.parametrize(("make", "copies"), [
    (lambda p: __import__("torch").optim.AdamW(p), 4),  # weights, gradients, two moments
    (lambda p: __import__("torch").optim.SGD(p, lr=0.1, momentum=0.9), 3),
    (lambda p: __import__("torch").optim.SGD(p, lr=0.1), 2),
])
def test_the_bound_counts_the_optimizers_copies_of_the_weights(make: Any, copies: int) -> None:
    import torch

    from seqpoint.profiling._memory import state_copies

    assert state_copies(make([torch.nn.Parameter(torch.zeros(3))])) == copies
