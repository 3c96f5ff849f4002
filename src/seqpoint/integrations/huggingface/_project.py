"""``project_trainer``: a Trainer job projected (and checked) in one call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from seqpoint.executors import Executor
from seqpoint.integrations.huggingface._replay import schedule_from_trainer
from seqpoint.integrations.huggingface._workload import workload_from_trainer
from seqpoint.schedule import IterationSchedule, RunTrace, read_trace
from seqpoint.workflows import JobProjection, project_job

if TYPE_CHECKING:
    from transformers import Trainer

__all__ = ["project_trainer"]


def project_trainer(trainer: Trainer, *, traces: Sequence[RunTrace | str | Path] | None = None, n_points: int = 10,
                    processes: int = 1, cold_window: int = 0, first_n: int = 10,
                    progress: bool = False, executor: Executor | str = "local") -> JobProjection:
    """``trainer.train()``'s whole run projected from SeqPoints of the trainer's own step.

    Parameters
    ----------
    trainer : transformers.Trainer
        The user's trainer (TRL's too); its model is copied, never trained.
    traces : sequence of RunTrace or paths, optional
        Runs recorded with :class:`SeqPointCallback`: the first one's micro-batches are the
        schedule, and the projection is checked against their mean (two or more give the
        noise floor). Without traces the run is replayed (:func:`schedule_from_trainer`).
    n_points, processes, cold_window, first_n, progress, executor
        As for :func:`seqpoint.workflows.project_job` (a remote executor gets the trainer's step pickled).

    Returns
    -------
    JobProjection
        ``print(result)`` shows the projection, its interval, the profiling cost and, with
        traces, the error against them.
    """
    workload = workload_from_trainer(trainer)  # first: a trainer it refuses is refused before the replay
    runs = None if traces is None else [t if isinstance(t, RunTrace) else read_trace(t) for t in traces]
    schedule: RunTrace | IterationSchedule = runs[0] if runs else schedule_from_trainer(trainer)
    return project_job(schedule, workload, traces=runs, n_points=n_points,
                       processes=processes, cold_window=cold_window, first_n=first_n, progress=progress,
                       executor=executor)
