"""A timed in-sequence window of a run (:func:`profile_window`): consecutive iterations
stepped in order in one fresh process, every step timed. It shows a shape's first step in
the run's own order, with its neighbours, which the projection's cold-step term calibrates on.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from seqpoint.clocks import TIMERS, in_callgrind, in_fresh_process, step_timer
from seqpoint.exceptions import ConfigError
from seqpoint.measurements import ProcessState, StepWindow
from seqpoint.profiling._shipping import ShippedWorkload
from seqpoint.profiling._startup import campaign_decoy, startup_state
from seqpoint.profiling._state import WorkloadState
from seqpoint.workloads import BatchShape, Signature, describe

__all__ = ["profile_window", "time_window"]


def time_window(workload: ShippedWorkload, steps: Sequence[Signature | BatchShape],
                decoy: Signature | None, timer: str, process: ProcessState | None = None) -> list[float]:
    """A worker's body: build the workload (in ``process``'s state) and time one step of each of
    ``steps``, in order, after the process start-up on ``decoy``."""
    if process is not None:
        process.apply()
    built = workload.build()
    clock = step_timer(timer, describe(built).devices)
    startup_state(built, WorkloadState(), decoy, [s.signature if isinstance(s, BatchShape) else s for s in steps])
    if process is not None:
        ProcessState.capture().check(process, where="The step window's process")
    out = []
    for item in steps:
        step = functools.partial(built.step, built.make_batch(item))  # type: ignore[arg-type]  # a BatchShape only to a workload that takes one
        out.append(clock(step))
    return out


def profile_window(
    workload: ShippedWorkload,
    signatures: Sequence[Sequence[int] | BatchShape],
    *,
    start: int = 0,
    timer: str = "wall",
    process: ProcessState | None = None,
) -> StepWindow:
    """Time every step of a stretch of the run, in order, in one fresh process
    (``Profiler.window``).

    Parameters
    ----------
    workload : ShippedWorkload
        Rebuilt in the fresh process from its recipe, or unpickled.
    signatures : sequence of tuple of int or BatchShape
        The signatures of iterations ``start, start + 1, ...`` of the schedule; for a
        workload that takes one, each iteration's BatchShape with its real lengths.
    start : int
        Schedule iteration of the first step (recorded; the projection checks it).
    timer : str
        Timer name (``wall``, ``cpu``, ``cuda``).
    process : ProcessState, optional
        The state the process runs in (``Profiler.process``).

    Returns
    -------
    StepWindow
        One time per step, seconds.
    """
    steps = [s if isinstance(s, BatchShape) else tuple(int(v) for v in s) for s in signatures]
    sigs = [s.signature if isinstance(s, BatchShape) else s for s in steps]
    TIMERS.get(timer)
    if in_callgrind(timer):
        raise ConfigError(f"A step window records seconds; the {timer!r} timer counts instructions. Use a clock "
                          "timer (wall, cpu, cuda), or the points' first steps for the cold-step term.")
    times = in_fresh_process(time_window, workload, steps, campaign_decoy(sigs), timer, process)
    return StepWindow(start=int(start), signatures=tuple(sigs), times_s=tuple(float(t) for t in times))
