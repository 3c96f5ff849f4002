"""The ground truth: every iteration of a schedule executed in order, timed, repeated."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import SeqPointError
from seqpoint.schedule import IterationSchedule
from seqpoint.validation._compare import noise_floor
from seqpoint.workloads import Workload

__all__ = ["FullRun", "FullRunError", "run_full_fresh", "run_full_schedule"]


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


def run_full_schedule(
    workload: Workload,
    schedule: IterationSchedule,
    *,
    runs: int = 2,
    warmup: int = 2,
    on_step: Callable[[int, int], None] | None = None,
) -> FullRun:
    """Execute every iteration of ``schedule`` in order, ``runs`` times, and time each step.

    Parameters
    ----------
    workload : Workload
        Provides ``make_batch(signature)`` and ``step(batch)``.
    schedule : IterationSchedule
        The iterations to run, in order.
    runs : int
        Identical repetitions of the whole run (two or more measure the noise floor).
    warmup : int
        Untimed steps on the first iteration's signature before the first run, so that
        one-time start-up cost (allocator, kernel selection) is not charged to the run.
    on_step : callable, optional
        ``on_step(run, iteration_index)`` after every step (progress reporting).

    Notes
    -----
    Only ``step`` is timed (by the ``wall`` timer of :data:`seqpoint.profiling.TIMERS`):
    batch construction stands in for the data loader, which a training-time projection
    does not model.
    """
    sigs = _signatures(schedule)
    _warm_up(workload, sigs[0], warmup)
    times = np.empty((runs, len(sigs)), dtype=np.float64)
    walls = np.empty(runs, dtype=np.float64)
    for r in range(runs):
        run_start = time.perf_counter()
        times[r] = _time_steps(workload, sigs, None if on_step is None else functools.partial(on_step, r))
        walls[r] = time.perf_counter() - run_start
    return FullRun(iteration_s=times, wall_s=walls)


def _signatures(schedule: IterationSchedule) -> list[tuple[int, ...]]:
    return [tuple(int(v) for v in row) for row in schedule.signature_matrix()]


def _warm_up(workload: Workload, signature: tuple[int, ...], steps: int) -> None:
    batch = workload.make_batch(signature)
    for _ in range(steps):
        workload.step(batch)


def _time_steps(
    workload: Workload, signatures: list[tuple[int, ...]], on_step: Callable[[int], None] | None = None,
) -> NDArray[np.float64]:
    """Seconds of ``step`` for each signature in order (batch construction untimed)."""
    from seqpoint.profiling import TIMERS
    from seqpoint.profiling._timers import workload_device

    timer, device = TIMERS.get("wall")(), workload_device(workload)
    times = np.empty(len(signatures), dtype=np.float64)
    for i, sig in enumerate(signatures):
        batch = workload.make_batch(sig)
        times[i] = timer(lambda: workload.step(batch), device)  # noqa: B023 - called at once
        if on_step is not None:
            on_step(i)
    return times


def _warmup_signature(workload: Workload, signatures: list[tuple[int, ...]]) -> tuple[int, ...]:
    """A shape for start-up steps that is not one of the run's signatures."""
    sig = tuple(getattr(workload, "warmup_signature", signatures[0]))
    taken = set(signatures)
    while sig in taken:
        sig = (sig[0], sig[1] + 1, *sig[2:])
    return sig


class FullRunError(SeqPointError, RuntimeError):
    """A fresh-process full run failed or its process died (a ``RuntimeError`` too)."""


def _fresh_run(spec: str, overrides: dict[str, Any], signatures: list[tuple[int, ...]],
               warmup: int) -> tuple[list[float], float]:  # pragma: no cover - runs in a fresh process
    """One timed run in the fresh process: every step's seconds, and the run's wall time."""
    from seqpoint.workloads import load_workload

    workload = load_workload(spec, overrides=overrides)
    _warm_up(workload, _warmup_signature(workload, signatures), warmup)
    t_run = time.perf_counter()
    times = _time_steps(workload, signatures)
    return times.tolist(), time.perf_counter() - t_run


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

    signatures = _signatures(schedule)
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
