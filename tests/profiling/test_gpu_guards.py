"""What a GPU campaign refuses or survives, checked without a GPU: a timer that cannot time the
workload's device, processes on an exclusive-process GPU, allocation failures in cuBLAS/cuDNN
words, and a failure that loses the process's CUDA context (the points after it not run)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from seqpoint.clocks import check_timer
from seqpoint.exceptions import ConfigError
from seqpoint.profiling import ProfileConfig, Profiler


@pytest.mark.parametrize(("timer", "device", "refused"), [
    ("instructions", "cuda", "callgrind, which cannot follow"),
    ("instructions", "cuda:1", "on cuda:1"),
    ("cuda", "cpu", "times GPU work"),
    ("cpu", "cuda", "busy wait for the GPU"),
    ("wall", "cuda", None), ("cuda", "cuda:0", None), ("instructions", "cpu", None), ("cpu", "cpu", None),
])
def test_a_timer_that_cannot_time_the_device_is_refused(timer: str, device: str, refused: str | None) -> None:
    if refused is None:
        check_timer(timer, device, workload="gnmt")
        return
    with pytest.raises(ConfigError, match=re.escape(refused)) as exc:
        check_timer(timer, device, workload="gnmt")
    assert "gnmt" in str(exc.value) or device in str(exc.value)
    assert "use timer =" in str(exc.value)


def test_a_registered_workloads_timer_is_checked_when_the_config_is_read() -> None:
    """Before anything is built or measured: the config names the device."""
    from seqpoint.workflows import RunConfig

    with pytest.raises(ConfigError, match="'instructions' timer"):
        RunConfig.from_dict({"workload": {"name": "gnmt:tiny", "set": {"device": "cuda"}},
                             "profile": {"timer": "instructions"}})
    RunConfig.from_dict({"workload": {"name": "gnmt:tiny", "set": {"device": "cuda"}}, "profile": {"timer": "wall"}})


class _Steps:
    """A protocol workload whose step fails above ``limit`` tokens: with ``message``."""

    name = "fails-above"

    def __init__(self, limit: int, message: str) -> None:
        self.config = {"limit": limit}
        self.limit, self.message = limit, message

    def make_batch(self, signature: tuple[int, ...]) -> tuple[int, ...]:
        return signature

    def step(self, batch: Any) -> float:
        if batch[0] * batch[1] > self.limit:
            raise RuntimeError(self.message)
        return 0.0


_CONFIG = ProfileConfig(timer="wall", warmup=1, repeats=2)


@pytest.mark.parametrize("message", [
    "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
    "cuDNN error: CUDNN_STATUS_ALLOC_FAILED",
    "CUDA out of memory. Tried to allocate 2.00 GiB",
])
def test_an_allocation_failure_in_any_librarys_words_is_out_of_memory(message: str) -> None:
    ms = Profiler(_Steps(100, message)).measure([(2, 10, 0), (4, 40, 0)], _CONFIG)
    small, large = ms.measurements
    assert small.ok and large.status == "oom"


def _lose_the_context_on_failure(monkeypatch: pytest.MonkeyPatch, lost: list[str]) -> None:
    """CUDA as a poisoned context looks to torch once ``lost`` holds the error: initialized, and
    every synchronize raising it (this machine has no GPU to poison)."""
    torch = pytest.importorskip("torch")

    def synchronize(device: object = None) -> None:
        raise RuntimeError(lost[0])
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: bool(lost))
    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)


def test_a_lost_cuda_context_fails_the_points_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """An illegal address poisons the context: every later CUDA call fails. The point that lost it
    says so, the rest are 'not run' (not a run of wrong numbers), and the campaign returns."""
    lost: list[str] = []
    _lose_the_context_on_failure(monkeypatch, lost)
    wl = _Steps(159, "CUDA error: an illegal memory access was encountered")  # the start-up's (4, 39) runs
    original = wl.step

    def step(batch: Any) -> float:
        try:
            return original(batch)
        except RuntimeError:
            lost.append("CUDA error: an illegal memory access was encountered")
            raise
    wl.step = step  # type: ignore[method-assign]
    ms = Profiler(wl).measure([(2, 10, 0), (4, 40, 0), (2, 12, 0), (2, 14, 0)], _CONFIG)
    first, bad, *after = ms.measurements
    assert first.ok
    assert bad.status == "error" and "CUDA context was lost at (4, 40, 0)" in bad.message
    assert all(m.status == "error" and m.message.startswith("not run: the process's CUDA context was lost")
               for m in after), [m.message for m in after]


def test_processes_on_an_exclusive_process_gpu_are_refused() -> None:
    p = Profiler(_Steps(100, ""))
    with pytest.raises(ConfigError, match=r"NVIDIA H100 is in Exclusive_Process compute mode.*\[profile\] processes = 3"):
        p.check_shared_gpu({"device": "NVIDIA H100", "compute_mode": "Exclusive_Process"}, "[profile] processes = 3")
    p.check_shared_gpu({"device": "NVIDIA H100", "compute_mode": "Default"}, "[profile] processes = 3")
    p.check_shared_gpu({"device": "cpu"}, "[profile] processes = 3")


def test_a_start_up_that_loses_the_cuda_context_fails_every_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """The start-up's decoy (the largest point's shape, one token shorter) fails first: no point runs."""
    _lose_the_context_on_failure(monkeypatch, ["CUDA error: device-side assert triggered"])
    ms = Profiler(_Steps(100, "CUDA error: device-side assert triggered")).measure([(2, 10, 0), (4, 40, 0)], _CONFIG)
    assert [m.status for m in ms.measurements] == ["error", "error"]
    assert "CUDA context was lost at (4, 39, 0)" in ms.measurements[0].message
