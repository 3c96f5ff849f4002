"""What every executor that measures in remote tasks shares (:class:`RemoteExecutor`): the driver plans each
job as the serial campaign does and alone touches the cache; one light probe task per resource request learns
a workload's cache key where it will be measured; then one task per job (or per ``points_per_task`` points),
each a fresh process that pays torch's import, the model build and the start-up once for all its points,
largest first. Each point reaches the driver and the cache as soon as its task returns it; a lost task's
points are recorded with the reason, and every other point goes on."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from seqpoint._live import Reporter
from seqpoint.cache import MeasurementCache
from seqpoint.exceptions import ConfigError
from seqpoint.executors._tasks import Job, PointResult, SweepStats, measure_task, probe_keys
from seqpoint.measurements import Measurements
from seqpoint.profiling import CampaignKey, Pending, Plan, ShippedWorkload

__all__ = ["RemoteExecutor", "Resources", "first_line"]

#: What one task asks of the cluster: ``(device, threads)``.
Resources = tuple[str, int]


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _job_id(job: Job) -> str:
    what = job.workload if isinstance(job.workload, str) else f"object:{id(job.workload)}"
    return json.dumps([what, dict(job.overrides)], sort_keys=True, default=str)


class RemoteExecutor:
    """The driver of an executor whose tasks run elsewhere; subclasses say how a task starts
    (:meth:`_submit`) and how its results come back (:meth:`_results`)."""

    #: The executor's name in messages (``ray``, ``submitit``).
    kind = "remote"

    def __init__(self, *, points_per_task: int | None = None) -> None:
        self.points_per_task = points_per_task
        self.last_stats: SweepStats | None = None
        self._keys: dict[str, CampaignKey] = {}

    # -- what a subclass provides ---------------------------------------------------
    def _connect(self) -> None:
        """Reach the cluster (raise ConfigError with the fix when it cannot)."""

    def _check(self, jobs: Sequence[Job], resources: Sequence[Resources]) -> None:
        """Refuse a job the cluster can never run."""

    def _submit(self, fn: Callable[..., Any], args: tuple[Any, ...], resources: Resources) -> Any:
        """Start ``fn(*args)`` as one task; a handle for :meth:`_results` and :meth:`_value`."""
        raise NotImplementedError

    def _value(self, handle: Any) -> Any:
        """The whole result of a task that returns once (a probe)."""
        raise NotImplementedError

    def _results(self, handles: Sequence[Any]) -> Iterator[tuple[Any, PointResult | BaseException | None]]:
        """Each measured point as it arrives, with its task; ``None`` when a task ended, an
        exception when it was lost."""
        raise NotImplementedError

    # -- the driver -----------------------------------------------------------------
    def profile(self, jobs: Sequence[Job], *, cache: MeasurementCache | None = None,
                reporter: Reporter | None = None) -> list[Measurements]:
        """One Measurements per job, in job order (see :class:`~seqpoint.executors.Executor`).

        Failed, out-of-memory and lost points are recorded with their status and message; the other points go
        on. Raises ConfigError for a job the cluster can never run, a workload that does not build as
        configured, or a workload whose probe built it on another device than the tasks would ask for.
        """
        reporter = reporter or Reporter(progress=False)
        self._connect()
        jobs = list(jobs)
        resources = [job.resources() for job in jobs]
        self._check(jobs, resources)
        shipped = [job.shipped(f'executor = "{self.kind}"') for job in jobs]
        keys = [self._keys.get(_job_id(job)) for job in jobs]
        # The key also tells whether a workload takes real lengths, which decides what is
        # measured apart: probe it when the cache or the points' lengths need it.
        unkeyed = [Plan.of(job.points, None, job.config) for job in jobs]
        want = [i for i, (k, plan) in enumerate(zip(keys, unkeyed, strict=True)) if k is None and (
            cache is not None or not plan.units or any(p.point.lengths is not None for p in plan.todo))]
        probes, broken = self._probe(jobs, shipped, resources, want, keys)
        plans = [Plan.of(job.points, keys[i], job.config, cache) for i, job in enumerate(jobs)]
        done = [dict(plan.cached) for plan in plans]
        for i, why in broken.items():
            done[i].update({p.unit: p.failed(why) for p in plans[i].todo})
        slots: list[tuple[int, Pending]] = []
        active: dict[Any, list[int]] = {}  # task handle -> its slots
        for i, job in enumerate(jobs):
            # largest first: the process start-up then runs next to the largest shape
            todo = [] if i in broken else sorted(plans[i].todo, key=lambda p: p.size, reverse=True)
            per = self.points_per_task or max(1, len(todo))
            for start in range(0, len(todo), per):
                chunk = [(len(slots) + n, p) for n, p in enumerate(todo[start:start + per])]
                slots.extend((i, p) for _, p in chunk)
                handle = self._submit(measure_task, (shipped[i], job.config, chunk), resources[i])
                active[handle] = [slot for slot, _ in chunk]
        total = sum(len(plan.cached) + len(plan.todo) for plan in plans)
        tasks = len(active)
        with reporter.bar(f"[bold]profile[/] on {self.kind}", total) as advance:
            advance(total - len(slots), None)
            for handle, got in self._results(list(active)):
                left = active[handle]
                if not isinstance(got, PointResult):  # the task ended, or was lost: its points left fail
                    why = ("the task ended before measuring this point" if got is None
                           else f"{type(got).__name__}: {first_line(got)}")
                    for i, p in (slots[slot] for slot in left):
                        done[i][p.unit] = p.failed(why)
                    advance(len(left), None)
                    left.clear()
                    continue
                i, p = slots[got.slot]
                if got.key is not None:
                    self._check_device(jobs[i], resources[i], got.key)
                    keys[i] = keys[i] or got.key
                    self._keys.setdefault(_job_id(jobs[i]), got.key)
                    _same_device(jobs[i], keys[i], got.key)
                    plans[i].store(p.unit, got.measurement, key=got.key)
                done[i][p.unit] = got.measurement
                left[:] = [slot for slot in left if slot != got.slot]  # a retried task may resend one
                advance(1, None)
        self.last_stats = SweepStats(pairs=total, cached=sum(len(p.cached) for p in plans),
                                     measured=len(slots), tasks=tasks, probes=probes)
        out = []
        for i, job in enumerate(jobs):
            key = keys[i] or CampaignKey(workload=str(job.workload), config={}, environment={})
            out.append(Measurements(workload=key.workload, config=key.config, environment=key.environment,
                                    measurements=plans[i].assemble(done[i])))
        return out

    def _probe(self, jobs: list[Job], shipped: list[ShippedWorkload], resources: list[Resources],
               want: list[int], keys: list[CampaignKey | None]) -> tuple[int, dict[int, str]]:
        """Fill ``keys[i]`` for ``want`` with one probe task per resource request; return the
        probes run and, by job, why a workload did not build on a worker (its points fail)."""
        groups: dict[Resources, list[int]] = {}
        for i in want:
            groups.setdefault(resources[i], []).append(i)
        handles = {res: self._submit(probe_keys, ([shipped[i] for i in idx],), res) for res, idx in groups.items()}
        broken: dict[int, str] = {}
        for res, idx in groups.items():
            try:
                answers: list[CampaignKey | str] = self._value(handles[res])
            except Exception as exc:  # the probe's task was lost: the jobs' points record why
                answers = [f"{type(exc).__name__}: {first_line(exc)}"] * len(idx)
            for i, answer in zip(idx, answers, strict=True):
                if isinstance(answer, CampaignKey):
                    self._check_device(jobs[i], res, answer)
                    keys[i] = self._keys[_job_id(jobs[i])] = answer
                elif answer.startswith("config: "):
                    raise ConfigError(answer.removeprefix("config: "))
                else:  # the workload does not build on a worker: its points fail
                    broken[i] = answer
        return len(groups), broken

    def _check_device(self, job: Job, resources: Resources, key: CampaignKey) -> None:
        """A workload that built on another kind of device than its tasks ask for would be
        measured there (a factory's ``cuda if available`` on a CPU task): refuse it."""
        built = str(key.environment.get("device_type", "cpu"))
        asked = resources[0].partition(":")[0]
        if built != asked:
            raise ConfigError(
                f"Workload {key.workload} built on {built} in a {self.kind} task that asked for {asked}: its "
                f"device is decided inside it, so say it: Job(device=\"{built}\") or workload.set.device=\"{built}\".")


def _same_device(job: Job, first: CampaignKey | None, got: CampaignKey) -> None:
    """One projection never mixes GPU types: every point of a job measured on the device of its first."""
    if first is None:
        return
    a, b = first.environment.get("device"), got.environment.get("device")
    if a != b:
        raise ConfigError(f"The points of {job.workload} were measured on {a!r} and on {b!r}: one projection "
                          "needs one kind of device; give the cluster's tasks one node type (Ray: a custom "
                          "resource or accelerator_type; Slurm: a partition or constraint).")
