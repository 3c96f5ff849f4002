"""Timers of one training step: ``wall``, ``cpu`` (thread CPU time), ``cuda`` (events) and
``instructions`` (a count under callgrind, not seconds: ``step_metric`` names what a timer
measures). A timer synchronises every device the step runs on before and after it."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from seqpoint._registry import Registry
from seqpoint.clocks._callgrind import count_instructions
from seqpoint.exceptions import ConfigError
from seqpoint.measurements import STEADY_TIME
from seqpoint.measurements.metrics import INSTRUCTIONS

__all__ = ["TIMERS", "check_timer", "in_callgrind", "step_timer", "time_stats"]


class Timer(Protocol):
    """Times one call of ``fn`` whose work runs on ``devices`` (``cpu``, ``cuda:0``, ...), in
    seconds (``instructions``: in instructions)."""

    def __call__(self, fn: Callable[[], object], devices: Sequence[str]) -> float: ...


#: Timers by name.
TIMERS: Registry[Callable[[], Timer]] = Registry("timer")


def step_timer(name: str, devices: Sequence[str]) -> Callable[[Callable[[], object]], float]:
    """The timer ``name`` of :data:`TIMERS` bound to a step's ``devices`` (``WorkloadFacts.devices``,
    the first where it runs): ``clock(fn)`` is the seconds of one call of ``fn``. Raises
    ConfigError for an unknown timer (listing the valid ones) or ``cuda`` without CUDA."""
    timer = TIMERS.get(name)()
    return lambda fn: timer(fn, devices)


def check_timer(timer: str, device: str, *, workload: str = "the workload") -> None:
    """ConfigError when timer ``timer`` cannot time a step on ``device`` (a workload's device:
    ``cpu``, ``cuda``, ``cuda:1``), naming both and the timer to use."""
    on_cuda = device.startswith("cuda")
    if timer == INSTRUCTIONS and on_cuda:
        raise ConfigError(f"The 'instructions' timer counts a step's host instructions under callgrind, which "
                          f"cannot follow {workload} on {device} (its kernels run on the GPU); use timer = \"cuda\" "
                          "or \"wall\".")
    if timer == "cuda" and not on_cuda:
        raise ConfigError(f"The 'cuda' timer times GPU work, and {workload} runs on {device}; use timer = \"wall\" "
                          "(or \"instructions\" for a count).")
    if timer == "cpu" and on_cuda:
        raise ConfigError(f"The 'cpu' timer counts the host thread's CPU time, which on {device} is mostly the busy "
                          f"wait for the GPU; use timer = \"cuda\" or \"wall\" for {workload}.")


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


def _sync(devices: Sequence[str]) -> None:
    """Wait for every CUDA device of the step (a model spread over GPUs runs its optimizer's
    tail on all of them)."""
    cuda = [d for d in devices if d.startswith("cuda")]
    if cuda:
        import torch

        for d in cuda:
            torch.cuda.synchronize(d)


def _clocked(clock: Callable[[], float]) -> Timer:
    """A timer reading ``clock`` around the call, with a CUDA synchronisation on both ends."""

    def timer(fn: Callable[[], object], devices: Sequence[str]) -> float:
        _sync(devices)
        t0 = clock()
        fn()
        _sync(devices)
        return clock() - t0

    return timer


@TIMERS.register("wall")
def _wall() -> Timer:
    """Wall-clock time (``time.perf_counter``)."""
    return _clocked(time.perf_counter)


@TIMERS.register("cpu")
def _cpu() -> Timer:
    """CPU time of the calling thread (``time.thread_time``): not intra-op worker threads, so the
    main thread's share when ``threads > 1``. A CPU workload's only: on a GPU it would count the
    host's busy wait for the device."""
    return _clocked(time.thread_time)


@TIMERS.register("cuda")
def _cuda() -> Timer:
    """GPU time between two CUDA events on the first device's current stream; a model spread over
    several GPUs has that stream wait for every other device's before the end event, so the step
    ends when its last device does."""
    import torch

    if not torch.cuda.is_available():
        raise ConfigError("The 'cuda' timer needs a CUDA device; torch sees none. Use --timer wall.")

    def timer(fn: Callable[[], object], devices: Sequence[str]) -> float:
        cuda = [d for d in devices if d.startswith("cuda")] or list(devices[:1])
        _sync(cuda)  # nothing of an earlier step still runs on any of them
        first = torch.cuda.current_stream(cuda[0])
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(first)
        fn()
        for d in cuda[1:]:
            first.wait_event(torch.cuda.current_stream(d).record_event())
        end.record(first)
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0

    return timer


@TIMERS.register(INSTRUCTIONS)
def _instructions() -> Timer:
    """User-space instructions of the step, counted under callgrind in a worker process (the
    AVX2 code path: valgrind hides AVX-512); a count, stored as ``instructions``, not seconds."""
    return count_instructions
