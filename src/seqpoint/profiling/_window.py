"""A timed in-sequence window of a run: W consecutive iterations stepped in order in one
fresh process, every step timed (:func:`profile_window`).

Isolated points cannot show two things a real run has: the extra time of a step whose
shape the run meets for the first time, in the run's own order and with its neighbours
(allocator, oneDNN's primitive cache), and how a step costs inside the run against alone.
A short window of the real schedule shows both; the projection calibrates its cold-step
term from it (``seqpoint.projection.first_occurrence``) and reports the in-run ratio.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from seqpoint.measurements import StepWindow
from seqpoint.profiling._fresh import in_fresh_process
from seqpoint.profiling._protocol import rebuild_recipe
from seqpoint.profiling._startup import campaign_decoy, startup_state
from seqpoint.profiling._timers import TIMERS, workload_device
from seqpoint.workloads import Signature, Workload

__all__ = ["profile_window", "time_window"]


def time_window(spec: str, overrides: dict[str, Any], signatures: Sequence[Signature],
                decoy: Signature | None, timer: str) -> list[float]:
    """Build the workload here and time one step of every signature, in order (a worker's body).

    The process start-up runs first on ``decoy`` (as a campaign's does), so the window's
    first steps pay their shapes' cold costs, not the process's.
    """
    from seqpoint.workloads import load_workload

    workload = load_workload(spec, overrides)
    device = workload_device(workload)
    clock = TIMERS.get(timer)()
    startup_state(workload, decoy, signatures)
    out = []
    for sig in signatures:
        step = functools.partial(workload.step, workload.make_batch(sig))
        out.append(clock(step, device))
    return out


def profile_window(
    workload: Workload,
    signatures: Sequence[Sequence[int]],
    *,
    start: int = 0,
    timer: str = "wall",
    decoy: Sequence[int] | None = None,
) -> StepWindow:
    """Time every step of a stretch of the run, in order, in one fresh process.

    Parameters
    ----------
    workload : Workload
        A registered workload (rebuilt in the fresh process from its name and config).
    signatures : sequence of tuple of int
        The signatures of iterations ``start, start + 1, ...`` of the schedule.
    start : int
        Schedule iteration of the first step (recorded; the projection checks it).
    timer : str
        Timer name (``wall``, ``cpu``, ``cuda``).
    decoy : tuple of int, optional
        Start-up shape (default: the campaign decoy of the window's signatures).

    Returns
    -------
    StepWindow
        One time per step, seconds.

    Raises
    ------
    ConfigError
        The workload cannot be rebuilt in another process (a user's ``module:function``).
    """
    sigs = [tuple(int(v) for v in s) for s in signatures]
    spec, overrides = rebuild_recipe(workload, what="A step window",
                                     fix="Calibrate the cold term from the points' first steps instead.")
    TIMERS.get(timer)
    start_shape = tuple(int(v) for v in decoy) if decoy is not None else campaign_decoy(sigs)
    times = in_fresh_process(time_window, spec, overrides, sigs, start_shape, timer)
    return StepWindow(start=int(start), signatures=tuple(sigs), times_s=tuple(float(t) for t in times))
