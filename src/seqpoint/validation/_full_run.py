"""The ground truth: every iteration of a schedule executed in order, timed, repeated."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint.schedule import IterationSchedule

__all__ = ["FullRun", "run_full_schedule"]


@dataclass(frozen=True, kw_only=True)
class FullRun:
    """Timed full runs of a schedule.

    Attributes
    ----------
    iteration_s : ndarray of shape (n_runs, n_iterations)
        Wall time of every training step, seconds, per run.
    wall_s : ndarray of shape (n_runs,)
        Wall time of each whole run (steps plus batch construction), seconds.
    """

    iteration_s: NDArray[np.float64]
    wall_s: NDArray[np.float64]

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
        t = self.totals_s
        if t.shape[0] < 2:
            return float("nan")
        return float((t.max() - t.min()) / t.mean())

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
        }


def _synchronizer(workload: Any) -> Callable[[], None]:
    device = str(getattr(getattr(workload, "config", None), "device", "cpu"))
    if device.startswith("cuda"):
        import torch

        return torch.cuda.synchronize
    return lambda: None


def run_full_schedule(
    workload: Any,
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
    Only ``step`` is timed: batch construction stands in for the data loader, which a
    training-time projection does not model. The device is synchronised around each
    step when it is a GPU.
    """
    sync = _synchronizer(workload)
    sigs = [tuple(int(v) for v in row) for row in schedule.signature_matrix()]
    first = workload.make_batch(sigs[0])
    for _ in range(warmup):
        workload.step(first)
    sync()
    times = np.empty((runs, len(sigs)), dtype=np.float64)
    walls = np.empty(runs, dtype=np.float64)
    for r in range(runs):
        run_start = time.perf_counter()
        for i, sig in enumerate(sigs):
            batch = workload.make_batch(sig)
            sync()
            t0 = time.perf_counter()
            workload.step(batch)
            sync()
            times[r, i] = time.perf_counter() - t0
            if on_step is not None:
                on_step(r, i)
        walls[r] = time.perf_counter() - run_start
    return FullRun(iteration_s=times, wall_s=walls)
