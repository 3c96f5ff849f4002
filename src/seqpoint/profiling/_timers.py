"""Timers of one training step: ``wall``, ``cpu`` (thread CPU time) and ``cuda`` (events),
and the device a workload's steps run on (what a timer synchronises)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from seqpoint._registry import Registry
from seqpoint.exceptions import ConfigError
from seqpoint.workloads import Workload

if TYPE_CHECKING:
    import torch

__all__ = ["TIMERS", "Timer", "workload_device"]


class Timer(Protocol):
    """Times one call of ``fn`` on ``device`` (a ``torch.device``), in seconds."""

    def __call__(self, fn: Callable[[], Any], device: Any) -> float: ...


#: Timers by name.
TIMERS: Registry[Callable[[], Timer]] = Registry("timer")


def workload_device(workload: Workload) -> torch.device:
    """The ``torch.device`` of ``workload``: its ``device``, else its config's, else the CPU."""
    import torch

    dev = getattr(workload, "device", None)
    if dev is None:
        dev = getattr(getattr(workload, "config", None), "device", "cpu")
    if dev is None or isinstance(dev, str):
        return torch.device(dev or "cpu")
    return cast("torch.device", dev)


def _sync(device: Any) -> None:
    if getattr(device, "type", "cpu") == "cuda":
        import torch

        torch.cuda.synchronize(device)


@TIMERS.register("wall")
def _wall() -> Timer:
    """Wall-clock time (``time.perf_counter``), with a CUDA synchronisation on both ends."""

    def timer(fn: Callable[[], Any], device: Any) -> float:
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        return time.perf_counter() - t0

    return timer


@TIMERS.register("cpu")
def _cpu() -> Timer:
    """CPU time of the calling thread (``time.thread_time``): excludes time spent waiting,
    and excludes intra-op worker threads, so it is the main thread's share when
    ``threads > 1``."""

    def timer(fn: Callable[[], Any], device: Any) -> float:
        _sync(device)
        t0 = time.thread_time()
        fn()
        _sync(device)
        return time.thread_time() - t0

    return timer


@TIMERS.register("cuda")
def _cuda() -> Timer:
    """GPU time between two CUDA events recorded around the step."""
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(
            "The 'cuda' timer needs a CUDA device; torch sees none. Use --timer wall."
        )

    def timer(fn: Callable[[], Any], device: Any) -> float:
        if getattr(device, "type", "cpu") != "cuda":
            raise ConfigError("The 'cuda' timer needs a workload on device=cuda; use --timer wall.")
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0

    return timer
