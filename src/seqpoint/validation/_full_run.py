"""The ground truth: every iteration of a schedule executed in order, timed (or, with the
``instructions`` timer, counted under callgrind), repeated."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import SeqPointError
from seqpoint.measurements import STEADY_TIME, ProcessState
from seqpoint.measurements.metrics import INSTRUCTIONS
from seqpoint.schedule import IterationSchedule
from seqpoint.validation._compare import noise_floor

__all__ = ["FullRun", "FullRunError", "run_full_fresh"]


@dataclass(frozen=True, kw_only=True)
class FullRun:
    """Timed full runs of a schedule.

    Attributes
    ----------
    iteration_s : ndarray of shape (n_runs, n_iterations)
        Wall time of every training step, seconds, per run; in :attr:`metric`'s unit (an
        instruction count with the ``instructions`` timer).
    wall_s : ndarray of shape (n_runs,)
        Wall time of each whole run (steps plus batch construction), seconds.
    interleaved : int
        How many of the runs were timed between the measurement protocol's worker
        processes (``validate`` with ``[profile] processes > 1``), so that they cover
        the same stretch of time as the projection's measurements; the others ran after.
    metric : str
        The step metric the runs measured: ``time_s``, or ``instructions`` (user-space
        instructions under callgrind, the projection's unit with that timer).
    check_s : ndarray of shape (n_runs, n_check)
        A check point's steps, timed at the end of each run (:attr:`metric`'s unit): set
        beside the same point's profiled steps, the machine's drift since profiling.
    """

    iteration_s: NDArray[np.float64]
    wall_s: NDArray[np.float64]
    interleaved: int = 0
    metric: str = STEADY_TIME
    check_s: NDArray[np.float64] = field(default_factory=lambda: np.empty((0, 0)))

    @classmethod
    def stack(cls, runs: Sequence[FullRun], *, interleaved: int = 0) -> FullRun:
        """The runs of several :class:`FullRun` of one schedule as one, in order."""
        metrics = {r.metric for r in runs}
        if len(metrics) != 1:
            raise ValueError(f"Full runs in different units cannot be stacked: {sorted(metrics)}.")
        checks = [r.check_s for r in runs if r.check_s.size]
        return cls(iteration_s=np.vstack([r.iteration_s for r in runs]),
                   wall_s=np.concatenate([r.wall_s for r in runs]), interleaved=interleaved,
                   metric=metrics.pop(), check_s=np.vstack(checks) if len(checks) == len(runs) else np.empty((0, 0)))

    @property
    def n_runs(self) -> int:
        return int(self.iteration_s.shape[0])

    @property
    def totals_s(self) -> NDArray[np.float64]:
        """Sum of step times of each run, seconds."""
        return self.iteration_s.sum(axis=1)

    @property
    def total_s(self) -> float:
        """Mean over runs of the summed step time: the measured truth."""
        return float(self.totals_s.mean())

    @property
    def noise_floor(self) -> float:
        """Largest relative difference between two identical runs' totals (fraction; NaN with one run)."""
        return noise_floor(self.totals_s)

    @property
    def per_iteration_s(self) -> NDArray[np.float64]:
        """Median over runs of each iteration's time, seconds, shape (n_iterations,)."""
        return np.median(self.iteration_s, axis=0)

    def to_dict(self) -> dict[str, Any]:
        return {"n_runs": self.n_runs, "n_iterations": int(self.iteration_s.shape[1]),
                "totals_s": self.totals_s.tolist(), "wall_s": self.wall_s.tolist(), "total_s": self.total_s,
                "noise_floor": self.noise_floor, "interleaved": self.interleaved, "metric": self.metric,
                "check_s": self.check_s.tolist()}


class FullRunError(SeqPointError, RuntimeError):
    """A fresh-process full run failed or its process died (a ``RuntimeError`` too)."""


def _fresh_run(spec: str, overrides: dict[str, Any], signatures: list[tuple[int, ...]], warmup: int,
               timer_name: str = "wall", check: tuple[int, ...] | None = None, check_steps: int = 0,
               process: ProcessState | None = None) -> tuple[list[float], float, list[float]]:  # pragma: no cover
    """One run in the fresh process: every step's seconds (or instructions), the run's wall
    time, and ``check_steps`` steps of ``check`` after the run (its shape warm by then).

    Only ``step`` is measured (``timer_name`` of :data:`seqpoint.clocks.TIMERS`): batch
    construction stands in for the data loader, which a projection does not model.
    """
    from seqpoint.clocks import step_timer
    from seqpoint.workloads import describe, load_workload

    if process is not None:
        process.apply()
    workload = load_workload(spec, overrides=overrides)
    facts = describe(workload)
    start = facts.warmup_signature or signatures[0]
    while start in signatures:  # start-up steps on a shape the run does not meet
        start = (start[0], start[1] + 1, *start[2:])
    batch = workload.make_batch(start)
    for _ in range(warmup):
        workload.step(batch)
    if process is not None:  # the workload has set what it sets: the rest must be the projection's
        ProcessState.capture().check(process, where="A full run's process")
    clock = step_timer(timer_name, facts.devices)
    times = []
    t_run = time.perf_counter()
    for sig in signatures:
        batch = workload.make_batch(sig)
        times.append(clock(lambda: workload.step(batch)))  # noqa: B023 - called at once
    wall = time.perf_counter() - t_run
    checked = []
    if check is not None and check_steps:
        batch = workload.make_batch(check)
        checked = [clock(lambda: workload.step(batch)) for _ in range(check_steps)]
    return times, wall, checked


def fresh_failure(what: str, exc: RuntimeError) -> FullRunError:
    """The one-line error of a fresh process that failed or died (``in_fresh_process``'s
    message: its exit code and the last line of its stderr), with the fix."""
    fix = ("give it more memory or a smaller workload (preset, batches)" if "(exit -9)" in str(exc)
           else "run it in this process to see the traceback")
    return FullRunError(f"{what} failed{str(exc).removeprefix('A worker process failed')}; {fix}.")


def run_full_fresh(spec: str, overrides: dict[str, Any], schedule: IterationSchedule, *, runs: int = 2,
                   warmup: int = 3, timer: str = "wall", check: tuple[int, ...] | None = None, check_steps: int = 3,
                   on_progress: Callable[[int, int], None] | None = None, process: ProcessState | None = None
                   ) -> FullRun:
    """Execute the schedule in order, each run in a fresh process, and time every step.

    A real training run starts in a fresh process, so every shape is new to it the first time it
    appears and the allocator starts empty; running each repetition in its own process
    (:func:`seqpoint.clocks.in_fresh_process`, as the profiling's workers) makes the repetitions
    identical, so their spread is the noise floor.

    Parameters
    ----------
    spec, overrides : str, dict
        The workload, as for :func:`seqpoint.workloads.load_workload` (rebuilt in the child
        process with the same seed, hence the same weights).
    warmup : int
        Steps of a shape that is not in the schedule, absorbing process start-up.
    timer : str
        A name of :data:`seqpoint.clocks.TIMERS`; ``instructions`` runs each process under
        callgrind and counts every step (:attr:`FullRun.metric` ``instructions``).
    check, check_steps : tuple, int
        A signature of the run (``validate``'s drift check point) timed ``check_steps`` times
        at the end of each run (:attr:`FullRun.check_s`).
    on_progress : callable, optional
        ``on_progress(run, steps_done)`` before and after each run.
    process : ProcessState, optional
        The state every run's process runs in (``Profiler.process``); a ConfigError when one cannot.

    Raises
    ------
    FullRunError
        (a ``RuntimeError`` and a SeqPointError) when the run fails in the child (its error, one
        line) or the child dies (its exit code, e.g. -9 when killed for memory).
    """
    from seqpoint.clocks import in_fresh_process

    counted = timer == INSTRUCTIONS
    signatures = [tuple(int(v) for v in row) for row in schedule.signature_matrix()]
    times = np.empty((runs, len(signatures)))
    walls = np.empty(runs)
    checks = np.empty((runs, check_steps if check is not None else 0))
    progress = on_progress or (lambda run, steps_done: None)
    for r in range(runs):
        progress(r, 0)
        try:
            times[r], walls[r], checks[r] = in_fresh_process(_fresh_run, spec, overrides, signatures, warmup, timer,
                                                             check, check_steps, process, callgrind=counted)
        except RuntimeError as exc:
            raise fresh_failure(f"The fresh process of full run {r + 1} of {spec}", exc) from None
        progress(r, len(signatures))
    return FullRun(iteration_s=times, wall_s=walls, metric=INSTRUCTIONS if counted else STEADY_TIME, check_s=checks)
