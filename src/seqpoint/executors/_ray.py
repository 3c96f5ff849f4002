"""The Ray executor: profile jobs on an existing Ray cluster or a local one.

Ray is imported only when a :class:`RayExecutor` connects. The driver plans every job as
the serial campaign does (:func:`~seqpoint.profiling.plan_points`) and alone touches the
cache. One task per job (or per ``points_per_task`` points), not per point: each task is
a fresh process (``max_calls=1``) that pays torch's import, the model build and the
start-up once for all its points. Tasks are streaming generators, so every point reaches
the driver (and the cache) as soon as it is measured; a dead worker's task is re-run.
Each task asks the cluster for its workload's CPUs or GPU, and a job the cluster can
never give them to is refused before anything runs.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, ClassVar

from seqpoint._live import live_bar
from seqpoint._params import Constraint, Interval, TypeOf, check_params
from seqpoint.cache import MeasurementCache
from seqpoint.exceptions import ConfigError
from seqpoint.executors._tasks import Job, PointResult, SweepStats, measure_task, probe_keys
from seqpoint.measurements import Measurements
from seqpoint.profiling._plan import CampaignKey, Pending, plan_points

if TYPE_CHECKING:  # rich is loaded only where a bar is drawn
    from rich.console import Console

__all__ = ["RayExecutor", "job_resources"]

_INSTALL = "install it with `pip install 'seqpoint[ray]'`"


def _job_id(job: Job) -> str:
    return json.dumps([job.workload, dict(job.overrides)], sort_keys=True, default=str)


class RayExecutor:
    """Profile jobs on Ray: one fresh worker process per task, the cache on the driver.

    Parameters
    ----------
    address : str, optional
        An existing cluster (``host:port``, ``ray://host:port`` or ``auto``); None starts
        a local Ray on this machine (or uses the one this process already joined).
    num_cpus : int, optional
        CPUs of the local Ray this executor starts (default: all); ignored with
        ``address``.
    points_per_task : int, optional
        Split a job's points into tasks of this many (more parallelism, one process
        start-up per task); None: one task per job.
    max_retries : int
        Times Ray re-runs a task whose worker process died.

    Notes
    -----
    The cache key includes the environment fingerprint of the process that measures.
    Before looking up the cache the driver runs one light probe task per distinct
    resource request, which builds each workload on a worker and returns its
    fingerprint without stepping it; probe results are kept for the executor's life.
    On a cluster of unlike nodes with the same resources, the probe's node decides
    what is looked up, and each point is stored under its measuring node's fingerprint.
    """

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "address": [TypeOf(str, "a str"), None],
        "num_cpus": [Interval(int, 1), None],
        "points_per_task": [Interval(int, 1), None],
        "max_retries": [Interval(int, 0)],
    }

    def __init__(
        self,
        address: str | None = None,
        num_cpus: int | None = None,
        *,
        points_per_task: int | None = None,
        max_retries: int = 3,
    ) -> None:
        check_params(type(self).__name__, self._parameter_constraints,
                     {"address": address, "num_cpus": num_cpus, "points_per_task": points_per_task,
                      "max_retries": max_retries})
        self.address = address
        self.num_cpus = num_cpus
        self.points_per_task = points_per_task
        self.max_retries = max_retries
        self.last_stats: SweepStats | None = None
        self._started = False
        self._keys: dict[str, CampaignKey] = {}

    # -- connection ----------------------------------------------------------------
    def connect(self) -> ModuleType:
        """Join the cluster (or start a local Ray) now; :meth:`profile` does it on first use.

        Returns the ``ray`` module. Raises :class:`~seqpoint.exceptions.ConfigError` when
        Ray is not installed or the address cannot be reached.
        """
        try:
            import ray
        except ImportError:
            raise ConfigError(f"The Ray executor needs Ray, which is not installed; {_INSTALL}.") from None
        if ray.is_initialized():
            return ray
        if self.address not in (None, "auto", "local"):
            check_reachable(self.address)
        kwargs: dict[str, Any] = {"log_to_driver": False}
        if self.address is None:
            kwargs.update(num_cpus=self.num_cpus, include_dashboard=False)
        try:
            ray.init(address=self.address, **kwargs)
        except (ConnectionError, TimeoutError, RuntimeError) as exc:
            where = self.address or "a new local Ray"
            raise ConfigError(
                f"Cannot connect to the Ray cluster at {where!r} ({_first_line(exc)}); "
                "start one with `ray start --head` or leave --address out to run locally."
            ) from None
        self._started = True
        return ray

    def close(self) -> None:
        """Shut down the Ray this executor started (a cluster it joined is left alone)."""
        if self._started:
            import ray

            ray.shutdown()
            self._started = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- profiling -----------------------------------------------------------------
    def profile(self, jobs: Sequence[Job], *, cache: MeasurementCache | None = None, progress: bool = True,
                console: Console | None = None) -> list[Measurements]:
        """One Measurements per job, in job order (see :class:`~seqpoint.executors.Executor`).

        Failed, out-of-memory and lost points are recorded with their status and message;
        the other points go on. Raises :class:`~seqpoint.exceptions.ConfigError` for a
        job the cluster can never run (more CPUs or GPUs than it has) or a workload spec
        or setting that does not build.
        """
        ray = self.connect()
        jobs = list(jobs)
        resources = [job_resources(job) for job in jobs]
        check_feasible(ray, jobs, resources)
        keys = [self._keys.get(_job_id(job)) for job in jobs]
        # The key also tells whether a workload takes real lengths, which decides what is
        # measured apart: probe it when the cache or the points' lengths need it.
        unkeyed = [plan_points(job.points, None, job.config) for job in jobs]
        want = [i for i, (k, plan) in enumerate(zip(keys, unkeyed, strict=True)) if k is None and (
            cache is not None or not plan.units or any(p.point.lengths is not None for p in plan.todo))]
        probes, broken = self._probe(ray, jobs, resources, want, keys)
        plans = [plan_points(job.points, keys[i], job.config, cache) for i, job in enumerate(jobs)]
        done = [dict(plan.cached) for plan in plans]
        for i, why in broken.items():
            done[i].update({p.unit: p.failed(why) for p in plans[i].todo})
        slots: list[tuple[int, Pending]] = []
        active: dict[object, list[int]] = {}  # Ray's streaming generators -> their slots
        remote = ray.remote(max_calls=1)(measure_task)
        for i, job in enumerate(jobs):
            # largest first: the process start-up then runs next to the largest shape
            todo = [] if i in broken else sorted(plans[i].todo, key=lambda p: p.size, reverse=True)
            per = self.points_per_task or max(1, len(todo))
            for start in range(0, len(todo), per):
                chunk = [(len(slots) + n, p) for n, p in enumerate(todo[start:start + per])]
                slots.extend((i, p) for _, p in chunk)
                gen = remote.options(**resources[i], max_retries=self.max_retries).remote(
                    job.workload, dict(job.overrides), job.config, chunk)
                active[gen] = [slot for slot, _ in chunk]
        total = sum(len(plan.cached) + len(plan.todo) for plan in plans)
        tasks = len(active)
        with live_bar("on Ray", total, console, progress) as advance:
            advance(total - len(slots), None)
            while active:
                ready, _ = ray.wait(list(active), num_returns=1)
                for gen in ready:
                    left = active[gen]
                    try:
                        res: PointResult = ray.get(next(gen))
                    except (StopIteration, ray.exceptions.RayError) as exc:  # retries spent: record, go on
                        why = ("the task ended before measuring this point" if isinstance(exc, StopIteration)
                               else f"{type(exc).__name__}: {_first_line(exc)}")
                        for i, p in (slots[slot] for slot in left):
                            done[i][p.unit] = p.failed(why)
                        advance(len(left), None)
                        del active[gen]
                        continue
                    i, p = slots[res.slot]
                    if res.key is not None:
                        keys[i] = keys[i] or res.key
                        self._keys.setdefault(_job_id(jobs[i]), res.key)
                        plans[i].store(p.unit, res.measurement, key=res.key)
                    done[i][p.unit] = res.measurement
                    left[:] = [slot for slot in left if slot != res.slot]  # a retried task may resend one
                    advance(1, None)
        self.last_stats = SweepStats(pairs=total, cached=sum(len(p.cached) for p in plans),
                                     measured=len(slots), tasks=tasks, probes=probes)
        out = []
        for i, job in enumerate(jobs):
            key = keys[i] or CampaignKey(workload=job.workload, config={}, environment={})
            out.append(Measurements(workload=key.workload, config=key.config, environment=key.environment,
                                    measurements=plans[i].assemble(done[i])))
        return out

    def _probe(self, ray: ModuleType, jobs: list[Job], resources: list[dict[str, float]],
               want: list[int], keys: list[CampaignKey | None]) -> tuple[int, dict[int, str]]:
        """Fill ``keys[i]`` for ``want`` with one probe task per resource request; return the
        probes run and, by job, why a workload did not build on a worker (its points fail)."""
        groups: dict[tuple[tuple[str, float], ...], list[int]] = {}
        for i in want:
            groups.setdefault(tuple(sorted(resources[i].items())), []).append(i)
        remote = ray.remote(max_calls=1)(probe_keys)
        refs = {
            group: remote.options(**resources[idx[0]], max_retries=self.max_retries).remote(
                [(jobs[i].workload, dict(jobs[i].overrides)) for i in idx])
            for group, idx in groups.items()
        }
        broken: dict[int, str] = {}
        for group, idx in groups.items():
            try:
                answers: list[CampaignKey | str] = ray.get(refs[group])
            except ray.exceptions.RayError as exc:
                answers = [f"{type(exc).__name__}: {_first_line(exc)}"] * len(idx)
            for i, answer in zip(idx, answers, strict=True):
                if isinstance(answer, CampaignKey):
                    keys[i] = self._keys[_job_id(jobs[i])] = answer
                elif answer.startswith("config: "):
                    raise ConfigError(answer.removeprefix("config: "))
                else:  # the workload does not build on a worker: its points fail
                    broken[i] = answer
        return len(groups), broken


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def job_resources(job: Job) -> dict[str, float]:
    """Ray resources one task of ``job`` asks for, from its workload config.

    ``num_gpus=1`` (and one CPU) when the workload's device is ``cuda``; otherwise
    ``num_cpus`` equal to its ``threads`` (1 when ``threads`` is 0, torch's default,
    which Ray then sets to the task's CPUs through ``OMP_NUM_THREADS``).
    """
    from seqpoint.workloads._loading import workload_config

    cfg = workload_config(job.workload, job.overrides)
    if cfg is not None:
        device, threads = str(cfg.device), int(cfg.threads)
    else:  # a user workload: only what its overrides say
        device = str(job.overrides.get("device", "cpu"))
        threads = int(job.overrides.get("threads", 1))
    if device.startswith("cuda"):
        return {"num_cpus": 1.0, "num_gpus": 1.0}
    return {"num_cpus": float(max(1, threads))}


def check_feasible(ray: ModuleType, jobs: list[Job], resources: list[dict[str, float]]) -> None:
    """A task asking for more than the whole cluster has would wait forever: refuse it."""
    have = ray.cluster_resources()
    for job, res in zip(jobs, resources, strict=True):
        for name, ray_name, what in (("num_cpus", "CPU", "CPUs"), ("num_gpus", "GPU", "GPUs")):
            need = res.get(name, 0.0)
            if need > have.get(ray_name, 0.0):
                raise ConfigError(
                    f"Workload {job.workload} {dict(job.overrides) or ''} needs {need:g} {what} per "
                    f"task but the Ray cluster has {have.get(ray_name, 0.0):g}; lower its threads, "
                    "use another device, or add nodes."
                )


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """One clear line now, instead of Ray retrying an unreachable address for minutes."""
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(
            f"The Ray address {address!r} is not host:port (e.g. 10.0.0.5:6379 or "
            "ray://10.0.0.5:10001); give the head node's address or 'auto'."
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ConfigError(
            f"Cannot reach a Ray cluster at {address!r} ({exc.strerror or exc}); check the "
            "address, start one there with `ray start --head`, or leave --address out to "
            "run on a local Ray."
        ) from None
