"""A timed in-sequence window of a run: W consecutive iterations stepped in order in one
fresh process, every step timed (:func:`profile_window`). It shows what isolated points
cannot: the extra time of a shape's first step in the run's own order, with its
neighbours (allocator, oneDNN's primitive cache); the projection calibrates its cold-step
term from it (``seqpoint.projection.first_occurrence``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from seqpoint.measurements import StepWindow
from seqpoint.profiling._fresh import in_fresh_process
from seqpoint.profiling._shipping import ShippedWorkload, ship_workload
from seqpoint.profiling._startup import campaign_decoy, startup_state
from seqpoint.profiling._timers import TIMERS, step_timer
from seqpoint.workloads import BatchShape, Signature, Workload

__all__ = ["profile_window", "time_window"]


def time_window(workload: ShippedWorkload, steps: Sequence[Signature | BatchShape],
                decoy: Signature | None, timer: str) -> list[float]:
    """Build the workload here and time one step of every signature (or BatchShape), in
    order, after the process start-up on ``decoy`` (a worker's body)."""
    built = workload.build()
    clock = step_timer(timer, built)
    startup_state(built, decoy, [s.signature if isinstance(s, BatchShape) else s for s in steps])
    out = []
    for item in steps:
        step = functools.partial(built.step, built.make_batch(item))  # type: ignore[arg-type]  # a BatchShape only to a workload that takes one
        out.append(clock(step))
    return out


def profile_window(
    workload: Workload,
    signatures: Sequence[Sequence[int] | BatchShape],
    *,
    start: int = 0,
    timer: str = "wall",
) -> StepWindow:
    """Time every step of a stretch of the run, in order, in one fresh process.

    Parameters
    ----------
    workload : Workload
        Rebuilt in the fresh process from the spec ``load_workload`` built it from, or
        sent pickled (as the workers of ``[profile] processes > 1``).
    signatures : sequence of tuple of int or BatchShape
        The signatures of iterations ``start, start + 1, ...`` of the schedule; for a
        workload that takes one, each iteration's BatchShape with its real lengths.
    start : int
        Schedule iteration of the first step (recorded; the projection checks it).
    timer : str
        Timer name (``wall``, ``cpu``, ``cuda``).

    Returns
    -------
    StepWindow
        One time per step, seconds.

    Raises
    ------
    ConfigError
        The workload has no recipe and does not pickle.
    """
    steps = [s if isinstance(s, BatchShape) else tuple(int(v) for v in s) for s in signatures]
    sigs = [s.signature if isinstance(s, BatchShape) else s for s in steps]
    shipped = ship_workload(workload, what="A step window ([profile] cold_window)",
                            fix="calibrate the cold term from the points' first steps (cold_window = 0)")
    TIMERS.get(timer)
    times = in_fresh_process(time_window, shipped, steps, campaign_decoy(sigs), timer)
    return StepWindow(start=int(start), signatures=tuple(sigs), times_s=tuple(float(t) for t in times))
