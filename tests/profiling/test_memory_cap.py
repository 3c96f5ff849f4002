"""Issue 13: a point that cannot fit is recorded as ``oom`` without allocating."""

from __future__ import annotations

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



def test_the_start_up_never_steps_a_refused_point() -> None:
    """The start-up shape is the campaign's largest point that fits: a refused one would allocate
    on the device (a GPU's far past its memory, here the host's) what the check refused."""
    wl = load_workload("bert:tiny", {"threads": 1})
    seen: list[tuple[int, ...]] = []
    make_batch = wl.make_batch
    wl.make_batch = lambda sig: seen.append(tuple(sig)) or make_batch(sig)  # type: ignore[method-assign]
    ms = profile_points(wl, [(2, 8, 0), (1 << 40, 512, 0)], ProfileConfig(warmup=0, repeats=1), progress=False)
    assert [m.status for m in ms.measurements] == ["ok", "oom"]
    assert seen and max(s[0] for s in seen) == 2
