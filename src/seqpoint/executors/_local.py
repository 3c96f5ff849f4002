"""The executor interface and the serial executor (today's path, in this process)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from seqpoint.cache import MeasurementCache
from seqpoint.executors._tasks import Job
from seqpoint.measurements import Measurements

if TYPE_CHECKING:  # rich is loaded only where a bar is drawn
    from rich.console import Console

__all__ = ["Executor", "LocalExecutor"]


@runtime_checkable
class Executor(Protocol):
    """Profiles jobs (workload configurations and their points) somewhere."""

    def profile(
        self,
        jobs: Sequence[Job],
        *,
        cache: MeasurementCache | None = None,
        progress: bool = True,
        console: Console | None = None,
    ) -> list[Measurements]:
        """One :class:`~seqpoint.measurements.Measurements` per job, in job order.

        Parameters
        ----------
        jobs : sequence of Job
        cache : MeasurementCache, optional
            Read first (cached pairs are not measured again) and written with each
            point measured ok as soon as it finishes, so an interrupted sweep resumes.
        progress : bool
            Show a rich progress bar.
        console : rich Console, optional
            Where the bar is drawn.
        """
        ...


class LocalExecutor:
    """Profile every job serially in this process (``seqpoint profile``'s path).

    Each job's workload is built here and measured by
    :func:`seqpoint.profiling.profile_points`, which reads and writes ``cache`` itself.
    """

    def profile(
        self,
        jobs: Sequence[Job],
        *,
        cache: MeasurementCache | None = None,
        progress: bool = True,
        console: Console | None = None,
    ) -> list[Measurements]:
        """One Measurements per job, in job order (see :meth:`Executor.profile`)."""
        from seqpoint.profiling import profile_points
        from seqpoint.workloads import load_workload

        out: list[Measurements] = []
        for job in jobs:
            workload = load_workload(job.workload, dict(job.overrides))
            out.append(
                profile_points(
                    workload, job.points, job.config,
                    cache=cache, progress=progress, console=console,
                )
            )
        return out
