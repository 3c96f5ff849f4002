"""The executor interface and the serial executor (this process)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from seqpoint._live import Reporter
from seqpoint.cache import MeasurementCache
from seqpoint.exceptions import ConfigError
from seqpoint.executors._ray import RayExecutor
from seqpoint.executors._submitit import SubmititExecutor
from seqpoint.executors._tasks import Job, SweepStats
from seqpoint.measurements import Measurements
from seqpoint.profiling import Plan, Profiler
from seqpoint.workloads import Workload

__all__ = ["EXECUTORS", "Executor", "LocalExecutor", "make_executor"]

#: Executor names of ``[profile] executor`` and ``--executor``.
EXECUTORS = ("local", "ray", "submitit")


@runtime_checkable
class Executor(Protocol):
    """Profiles jobs (workload configurations and their points) somewhere."""

    last_stats: SweepStats | None
    """What the last :meth:`profile` call did."""

    def profile(self, jobs: Sequence[Job], *, cache: MeasurementCache | None = None,
                reporter: Reporter | None = None) -> list[Measurements]:
        """One Measurements per job, in job order; ``cache`` is read first and written with each
        point measured ok as it finishes, so an interrupted sweep resumes."""
        ...


class LocalExecutor:
    """Profile every job serially in this process, each workload through one
    :class:`~seqpoint.profiling.Profiler` kept for the executor's life (a job's workload is built
    once from its recipe; its start-up runs once; the shapes it stepped stay warm)."""

    def __init__(self) -> None:
        self.last_stats: SweepStats | None = None
        self._profilers: dict[object, Profiler] = {}

    def profiler(self, job: Job, *, reporter: Reporter | None = None,
                 cache: MeasurementCache | None = None) -> Profiler:
        """The profiler of ``job``'s workload (built here from its recipe the first time)."""
        recipe = job.recipe()
        key: object = (recipe.spec, repr(sorted(recipe.overrides.items()))) if recipe is not None else id(job.workload)
        kept = self._profilers.get(key)
        if kept is None:
            built: Workload = recipe.build() if recipe is not None else job.workload  # type: ignore[assignment]
            kept = self._profilers[key] = Profiler(built, recipe=recipe)
        kept.cache, kept.reporter = cache, reporter or Reporter(progress=False)
        return kept

    def profile(self, jobs: Sequence[Job], *, cache: MeasurementCache | None = None,
                reporter: Reporter | None = None) -> list[Measurements]:
        """One Measurements per job, in job order (see :meth:`Executor.profile`)."""
        out: list[Measurements] = []
        pairs = cached = measured = tasks = 0
        for job in jobs:
            profiler = self.profiler(job, reporter=reporter, cache=cache)
            plan = Plan.of(job.points, profiler.key(), job.config, cache)
            pairs, cached = pairs + len(plan.cached) + len(plan.todo), cached + len(plan.cached)
            measured, tasks = measured + len(plan.todo), tasks + bool(plan.todo)
            out.append(profiler.run(plan))
        self.last_stats = SweepStats(pairs=pairs, cached=cached, measured=measured, tasks=tasks, probes=0)
        return out


def make_executor(name: str, *, address: str | None = None, num_cpus: int | None = None) -> Executor:
    """The executor called ``name`` (``address`` and ``num_cpus`` are Ray's, see
    :class:`~seqpoint.executors.RayExecutor`)."""
    if name not in EXECUTORS:
        raise ConfigError(f"Unknown executor {name!r}. Valid executors: {', '.join(EXECUTORS)}.")
    if name == "ray":
        return RayExecutor(address=address, num_cpus=num_cpus)
    if address is not None or num_cpus is not None:
        raise ConfigError("--address and --num-cpus apply to the Ray executor; add --executor ray.")
    return SubmititExecutor() if name == "submitit" else LocalExecutor()
