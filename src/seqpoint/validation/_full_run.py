"""The ground truth: every iteration of a schedule executed in order, timed, repeated."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import SeqPointError
from seqpoint.schedule import IterationSchedule
from seqpoint.validation._compare import noise_floor

__all__ = ["FullRun", "FullRunError", "run_full_fresh"]


@dataclass(frozen=True, kw_only=True)
class FullRun:
    """Timed full runs of a schedule.

    Attributes
    ----------
    iteration_s : ndarray of shape (n_runs, n_iterations)
        Wall time of every training step, seconds, per run.
    wall_s : ndarray of shape (n_runs,)
        Wall time of each whole run (steps plus batch construction), seconds.
    interleaved : int
        How many of the runs were timed between the measurement protocol's worker
        processes (``validate`` with ``[profile] processes > 1``), so that they cover
        the same stretch of time as the projection's measurements; the others ran after.
    """

    iteration_s: NDArray[np.float64]
    wall_s: NDArray[np.float64]
    interleaved: int = 0

    @classmethod
    def stack(cls, runs: Sequence[FullRun], *, interleaved: int = 0) -> FullRun:
        """The runs of several :class:`FullRun` of one schedule as one, in order."""
        return cls(iteration_s=np.vstack([r.iteration_s for r in runs]),
                   wall_s=np.concatenate([r.wall_s for r in runs]), interleaved=interleaved)

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
        """Largest relative difference between two identical runs' totals (fraction).

        With one run there is no floor to measure and this is NaN.
        """
        return noise_floor(self.totals_s)

    @property
    def per_iteration_s(self) -> NDArray[np.float64]:
        """Median over runs of each iteration's time, seconds, shape (n_iterations,)."""
        return np.median(self.iteration_s, axis=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_runs": self.n_runs,
            "n_iterations": int(self.iteration_s.shape[1]),
            "totals_s": self.totals_s.tolist(),
            "wall_s": self.wall_s.tolist(),
            "total_s": self.total_s,
            "noise_floor": self.noise_floor,
            "interleaved": self.interleaved,
        }


class FullRunError(SeqPointError, RuntimeError):
    """A fresh-process full run failed or its process died (a ``RuntimeError`` too)."""


def _fresh_run(spec: str, overrides: dict[str, Any], signatures: list[tuple[int, ...]],
               warmup: int) -> tuple[list[float], float]:  # pragma: no cover - runs in a fresh process
    """One run in the fresh process: every step's seconds, and the run's wall time.

    Only ``step`` is timed (the ``wall`` timer of :data:`seqpoint.profiling.TIMERS`): batch
    construction stands in for the data loader, which a projection does not model.
    """
    from seqpoint.profiling import TIMERS
    from seqpoint.profiling._timers import workload_device
    from seqpoint.workloads import load_workload

    workload = load_workload(spec, overrides=overrides)
    start = tuple(getattr(workload, "warmup_signature", signatures[0]))
    while start in signatures:  # start-up steps on a shape the run does not meet
        start = (start[0], start[1] + 1, *start[2:])
    batch = workload.make_batch(start)
    for _ in range(warmup):
        workload.step(batch)
    timer, device = TIMERS.get("wall")(), workload_device(workload)
    times = []
    t_run = time.perf_counter()
    for sig in signatures:
        batch = workload.make_batch(sig)
        times.append(timer(lambda: workload.step(batch), device))  # noqa: B023 - called at once
    return times, time.perf_counter() - t_run


def fresh_failure(what: str, exc: RuntimeError) -> FullRunError:
    """The one-line error of a fresh process that failed or died (``in_fresh_process``'s
    message: its exit code and the last line of its stderr), with the fix."""
    fix = ("give it more memory or a smaller workload (preset, batches)" if "(exit -9)" in str(exc)
           else "run it in this process to see the traceback")
    return FullRunError(f"{what} failed{str(exc).removeprefix('A worker process failed')}; {fix}.")


def run_full_fresh(
    spec: str,
    overrides: dict[str, Any],
    schedule: IterationSchedule,
    *,
    runs: int = 2,
    warmup: int = 3,
    on_progress: Callable[[int, int], None] | None = None,
) -> FullRun:
    """Execute the schedule in order, each run in a fresh process, and time every step.

    A real training run starts in a fresh process, so every shape is new to it the
    first time it appears and the allocator starts empty; running each repetition in
    its own process (:func:`seqpoint.profiling.in_fresh_process`, as the profiling's
    workers) makes the repetitions identical, so their spread is the noise floor.

    Parameters
    ----------
    spec, overrides : str, dict
        The workload, as for :func:`seqpoint.workloads.load_workload` (rebuilt in the
        child process with the same seed, hence the same weights).
    warmup : int
        Steps of a shape that is not in the schedule, absorbing process start-up.
    on_progress : callable, optional
        ``on_progress(run, steps_done)`` before and after each run.

    Raises
    ------
    FullRunError
        When the run fails in the child (the child's error, one line) or the child
        dies (its exit code, e.g. -9 when killed for memory). It is a ``RuntimeError``
        and a :class:`~seqpoint.exceptions.SeqPointError`.
    """
    from seqpoint.profiling._fresh import in_fresh_process

    signatures = [tuple(int(v) for v in row) for row in schedule.signature_matrix()]
    times = np.empty((runs, len(signatures)))
    walls = np.empty(runs)
    for r in range(runs):
        if on_progress is not None:
            on_progress(r, 0)
        try:
            times[r], walls[r] = in_fresh_process(_fresh_run, spec, overrides, signatures, warmup)
        except RuntimeError as exc:
            raise fresh_failure(f"The fresh process of full run {r + 1} of {spec}", exc) from None
        if on_progress is not None:
            on_progress(r, len(signatures))
    return FullRun(iteration_s=times, wall_s=walls)
