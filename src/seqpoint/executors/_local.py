"""The executor interface and the serial executor (this process)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from seqpoint.cache import MeasurementCache
from seqpoint.exceptions import ConfigError
from seqpoint.executors._tasks import Job, SweepStats
from seqpoint.measurements import Measurements
from seqpoint.profiling._campaign import measure_plan
from seqpoint.profiling._plan import CampaignKey, plan_points

if TYPE_CHECKING:  # rich is loaded only where a bar is drawn
    from rich.console import Console

__all__ = ["EXECUTORS", "Executor", "LocalExecutor", "make_executor"]

#: Executor names of ``[profile] executor`` and ``seqpoint sweep --executor``.
EXECUTORS = ("local", "ray")


@runtime_checkable
class Executor(Protocol):
    """Profiles jobs (workload configurations and their points) somewhere."""

    last_stats: SweepStats | None
    """What the last :meth:`profile` call did."""

    def profile(self, jobs: Sequence[Job], *, cache: MeasurementCache | None = None, progress: bool = True,
                console: Console | None = None) -> list[Measurements]:
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
    """Profile every job serially in this process: each job's workload is built here, planned
    (:func:`~seqpoint.profiling.plan_points`) and measured as ``profile_points`` does."""

    def __init__(self) -> None:
        self.last_stats: SweepStats | None = None

    def profile(self, jobs: Sequence[Job], *, cache: MeasurementCache | None = None, progress: bool = True,
                console: Console | None = None) -> list[Measurements]:
        """One Measurements per job, in job order (see :meth:`Executor.profile`)."""
        from seqpoint.workloads import load_workload

        out: list[Measurements] = []
        pairs = cached = measured = tasks = 0
        for job in jobs:
            workload = load_workload(job.workload, dict(job.overrides))
            plan = plan_points(job.points, CampaignKey.of(workload, code=cache is not None), job.config, cache)
            pairs, cached = pairs + len(plan.cached) + len(plan.todo), cached + len(plan.cached)
            measured, tasks = measured + len(plan.todo), tasks + bool(plan.todo)
            out.append(measure_plan(workload, plan, progress=progress, console=console))
        self.last_stats = SweepStats(pairs=pairs, cached=cached, measured=measured, tasks=tasks, probes=0)
        return out


def make_executor(name: str, *, address: str | None = None, num_cpus: int | None = None) -> Executor:
    """The executor called ``name`` (``address`` and ``num_cpus`` are Ray's, see
    :class:`~seqpoint.executors.RayExecutor`)."""
    from seqpoint.executors._ray import RayExecutor

    if name not in EXECUTORS:
        raise ConfigError(f"Unknown executor {name!r}. Valid executors: {', '.join(EXECUTORS)}.")
    if name == "ray":
        return RayExecutor(address=address, num_cpus=num_cpus)
    if address is not None or num_cpus is not None:
        raise ConfigError("--address and --num-cpus apply to the Ray executor; add --executor ray.")
    return LocalExecutor()
