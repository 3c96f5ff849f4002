"""Timers of one training step: ``wall``, ``cpu`` (thread CPU time), ``cuda`` (events) and
``instructions`` (a count under callgrind, not seconds: :func:`step_metric` names what a timer
measures), and the device a workload's steps run on (what a timer synchronises)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, cast

from seqpoint._registry import Registry
from seqpoint.exceptions import ConfigError
from seqpoint.measurements import STEADY_TIME
from seqpoint.measurements._metrics import INSTRUCTIONS
from seqpoint.profiling._callgrind import count_instructions
from seqpoint.workloads import Workload

if TYPE_CHECKING:
    import torch

__all__ = ["TIMERS", "Timer", "in_callgrind", "step_timer", "time_stats", "workload_device"]


class Timer(Protocol):
    """Times one call of ``fn`` on ``device`` (a ``torch.device``), in seconds (``instructions``:
    in instructions)."""

    def __call__(self, fn: Callable[[], object], device: torch.device) -> float: ...


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


def step_timer(name: str, workload: Workload) -> Callable[[Callable[[], object]], float]:
    """The timer ``name`` of :data:`TIMERS` bound to ``workload``'s device: ``clock(fn)`` is
    the seconds of one call of ``fn`` (a step). Raises ConfigError for an unknown timer
    (listing the valid ones) or ``cuda`` without CUDA."""
    timer, device = TIMERS.get(name)(), workload_device(workload)
    return lambda fn: timer(fn, device)


def in_callgrind(timer: str) -> bool:
    """True for a timer that counts only in a worker process started under callgrind."""
    return timer == INSTRUCTIONS


def time_stats(times: list[float], name: str = STEADY_TIME) -> dict[str, float]:
    """``time_s`` (the median), its min, max, interquartile range and standard deviation, and
    ``repeats``, of timed repeats (seconds); ``name`` is the step metric (``instructions``)."""
    ordered = sorted(times)
    q = statistics.quantiles(times, n=4, method="inclusive") if len(times) >= 2 else [0.0, 0.0, 0.0]
    return {name: statistics.median(times), f"{name}_min": ordered[0],
            f"{name}_max": ordered[-1], f"{name}_iqr": q[2] - q[0],
            f"{name}_std": statistics.stdev(times) if len(times) >= 2 else 0.0,
            "repeats": float(len(times))}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)


def _clocked(clock: Callable[[], float]) -> Timer:
    """A timer reading ``clock`` around the call, with a CUDA synchronisation on both ends."""

    def timer(fn: Callable[[], object], device: torch.device) -> float:
        _sync(device)
        t0 = clock()
        fn()
        _sync(device)
        return clock() - t0

    return timer


@TIMERS.register("wall")
def _wall() -> Timer:
    """Wall-clock time (``time.perf_counter``)."""
    return _clocked(time.perf_counter)


@TIMERS.register("cpu")
def _cpu() -> Timer:
    """CPU time of the calling thread (``time.thread_time``): no waiting, and not intra-op
    worker threads, so the main thread's share when ``threads > 1``."""
    return _clocked(time.thread_time)


@TIMERS.register("cuda")
def _cuda() -> Timer:
    """GPU time between two CUDA events recorded around the step."""
    import torch

    if not torch.cuda.is_available():
        raise ConfigError("The 'cuda' timer needs a CUDA device; torch sees none. Use --timer wall.")

    def timer(fn: Callable[[], object], device: torch.device) -> float:
        if device.type != "cuda":
            raise ConfigError("The 'cuda' timer needs a workload on device=cuda; use --timer wall.")
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0

    return timer


@TIMERS.register(INSTRUCTIONS)
def _instructions() -> Timer:
    """User-space instructions of the step, counted under callgrind in a worker process (the
    AVX2 code path: valgrind hides AVX-512); a count, stored as ``instructions``, not seconds."""
    return count_instructions
