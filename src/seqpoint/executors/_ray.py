"""The Ray executor: profile jobs on an existing Ray cluster or a local one.

Ray is an optional extra, imported only when a :class:`RayExecutor` connects. The driver
alone reads and writes the measurement cache; workers measure and return.

One task per job (or per ``points_per_task`` points of a job), not per point: each
task is a fresh process (``max_calls=1``) that pays the import of torch, the model
build and the process start-up steps once for all its points, as the serial path does;
on two cores a task per point spent more time starting processes than measuring. Tasks
are streaming generators, so every point reaches the driver (and the cache) as soon as
it is measured; a task whose worker dies is re-run by Ray (``max_retries``), which skips
the points the driver already received.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, ClassVar

from seqpoint._live import shows_live
from seqpoint._params import Constraint, Interval, TypeOf, check_params
from seqpoint.cache import MeasurementCache
from seqpoint.exceptions import ConfigError
from seqpoint.executors._cluster import (
    SweepStats,
    check_feasible,
    check_reachable,
    job_resources,
    resource_key,
)
from seqpoint.executors._tasks import (
    Header,
    Job,
    Point,
    PointResult,
    as_points,
    failed,
    measure_points,
    probe_headers,
)
from seqpoint.measurements import Measurement, Measurements
from seqpoint.profiling import key_environment, lengths_key, point_shape

if TYPE_CHECKING:  # rich is loaded only where a bar is drawn
    from rich.console import Console

__all__ = ["RayExecutor"]

_INSTALL = "install it with `pip install 'seqpoint[ray]'`"

#: What is measured once: a signature and, for a workload that takes a BatchShape, the
#: digest of the point's real lengths (the serial campaign's unit and cache key).
Unit = tuple[tuple[int, ...], str | None]


def _header_key(job: Job) -> str:
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
        check_params(
            type(self).__name__,
            self._parameter_constraints,
            {"address": address, "num_cpus": num_cpus,
             "points_per_task": points_per_task, "max_retries": max_retries},
        )
        self.address = address
        self.num_cpus = num_cpus
        self.points_per_task = points_per_task
        self.max_retries = max_retries
        self.last_stats: SweepStats | None = None
        self._started = False
        self._headers: dict[str, Header] = {}

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

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- profiling -----------------------------------------------------------------
    def profile(
        self,
        jobs: Sequence[Job],
        *,
        cache: MeasurementCache | None = None,
        progress: bool = True,
        console: Console | None = None,
    ) -> list[Measurements]:
        """One Measurements per job, in job order (see :class:`~seqpoint.executors.Executor`).

        Failed, out-of-memory and lost points are recorded with their status and message;
        the other points go on. Raises :class:`~seqpoint.exceptions.ConfigError` for a
        job the cluster can never run (more CPUs or GPUs than it has) or a workload spec
        or setting that does not build.
        """
        ray = self.connect()
        jobs = list(jobs)
        points = [as_points(job.points) for job in jobs]
        resources = [job_resources(job) for job in jobs]
        check_feasible(ray, jobs, resources)
        headers: list[Header | None] = [self._headers.get(_header_key(job)) for job in jobs]
        # The probe also tells whether a workload takes real lengths, which decides what
        # is measured apart and how it is keyed.
        want = [
            i for i, h in enumerate(headers)
            if h is None and (cache is not None or not points[i]
                              or any(p.lengths is not None for p in points[i]))
        ]
        probes, broken = self._probe(ray, jobs, resources, want, headers)
        units = [_units(pts, headers[i]) for i, pts in enumerate(points)]
        uniq = [list(dict.fromkeys(u for _, u in us)) for us in units]
        sent = [dict(zip((u for _, u in us), pts, strict=True)) for us, pts in zip(units, points, strict=True)]
        done: list[dict[Unit, Measurement]] = [
            {u: failed(u[0], broken[i]) for u in uniq[i]} if i in broken else {} for i in range(len(jobs))
        ]
        cached = 0
        if cache is not None:
            for i, job in enumerate(jobs):
                h = headers[i]
                if h is None:
                    continue
                for unit in uniq[i]:
                    if unit in done[i]:
                        continue
                    hit = cache.get(_key(cache, h, unit, job))
                    if hit is not None:
                        done[i][unit] = hit
                        cached += 1
        slots: list[tuple[int, Unit]] = []
        tasks: list[tuple[int, list[tuple[int, Point]]]] = []
        for i in range(len(jobs)):
            # largest first: the process start-up then runs next to the largest shape
            todo = sorted((u for u in uniq[i] if u not in done[i]), key=lambda u: _size(u[0]), reverse=True)
            per = self.points_per_task or max(1, len(todo))
            for start in range(0, len(todo), per):
                chunk = []
                for unit in todo[start:start + per]:
                    chunk.append((len(slots), sent[i][unit]))
                    slots.append((i, unit))
                tasks.append((i, chunk))
        remote = ray.remote(max_calls=1)(measure_points)
        active: dict[Any, list[tuple[int, Unit]]] = {}
        for i, chunk in tasks:
            job = jobs[i]
            gen = remote.options(**resources[i], max_retries=self.max_retries).remote(
                job.workload, dict(job.overrides), job.config, chunk
            )
            active[gen] = [(slot, slots[slot][1]) for slot, _ in chunk]
        total = sum(len(s) for s in uniq)

        def record(res: PointResult) -> None:
            i, unit = slots[res.slot]
            m = res.measurement
            if res.header is not None:
                if headers[i] is None:
                    headers[i] = res.header
                self._headers.setdefault(_header_key(jobs[i]), res.header)
                if cache is not None and m.ok:
                    cache.put(_key(cache, res.header, unit, jobs[i]), m,
                              workload=res.header.workload, signature=unit[0])
            done[i][unit] = m

        with _Bar(progress and total > 0, total, console) as bar:
            bar.advance(total - len(slots))
            while active:
                ready, _ = ray.wait(list(active), num_returns=1)
                for gen in ready:
                    left = active[gen]
                    try:
                        res = ray.get(next(gen))
                    except StopIteration:
                        _fail_all(left, "the task ended before measuring this point", slots, done)
                        bar.advance(len(left))
                        del active[gen]
                        continue
                    except ray.exceptions.RayError as exc:  # retries spent: record, go on
                        status = "oom" if isinstance(exc, ray.exceptions.OutOfMemoryError) else "error"
                        _fail_all(left, f"{type(exc).__name__}: {_first_line(exc)}", slots, done,
                                  status=status)
                        bar.advance(len(left))
                        del active[gen]
                        continue
                    record(res)
                    left[:] = [p for p in left if p[0] != res.slot]
                    bar.advance(1)
        self.last_stats = SweepStats(pairs=total, cached=cached, measured=len(slots),
                                     tasks=len(tasks), probes=probes)
        return [
            _assemble(job, units[i], done[i], headers[i]) for i, job in enumerate(jobs)
        ]

    def _probe(
        self, ray: ModuleType, jobs: list[Job], resources: list[dict[str, float]],
        want: list[int], headers: list[Header | None],
    ) -> tuple[int, dict[int, str]]:
        """Fill ``headers[i]`` for ``want`` with one probe task per resource request.

        Returns the probes run and, by job, why a workload did not build on a worker
        (its points then fail).
        """
        groups: dict[tuple[tuple[str, float], ...], list[int]] = {}
        for i in want:
            groups.setdefault(resource_key(resources[i]), []).append(i)
        remote = ray.remote(max_calls=1)(probe_headers)
        refs = {
            key: remote.options(**resources[idx[0]], max_retries=self.max_retries).remote(
                [(jobs[i].workload, dict(jobs[i].overrides), jobs[i].config) for i in idx]
            )
            for key, idx in groups.items()
        }
        broken: dict[int, str] = {}
        for key, idx in groups.items():
            try:
                answers: list[Header | str] = ray.get(refs[key])
            except ray.exceptions.RayError as exc:
                answers = [f"{type(exc).__name__}: {_first_line(exc)}"] * len(idx)
            for i, answer in zip(idx, answers, strict=True):
                if isinstance(answer, Header):
                    headers[i] = self._headers[_header_key(jobs[i])] = answer
                elif answer.startswith("config: "):
                    raise ConfigError(answer.removeprefix("config: "))
                else:  # the workload does not build on a worker: its points fail
                    broken[i] = answer
        return len(groups), broken


def _units(points: list[Point], header: Header | None) -> list[tuple[int, Unit]]:
    """``(iteration, unit)`` of each point: the serial campaign's BatchShape and its
    lengths key (:func:`seqpoint.profiling.point_shape`), when the workload takes one."""
    takes = header is not None and header.takes_shape
    name = header.workload if header is not None else "workload"
    return [
        (p.iteration, (p.signature, lengths_key(point_shape(p, takes_shape=takes, name=name))))
        for p in points
    ]


def _key(cache: MeasurementCache, h: Header, unit: Unit, job: Job) -> str:
    env = key_environment(h.environment, h.code)
    return cache.key(h.workload, h.config, env, unit[0], job.config.to_dict(), lengths=unit[1])


def _size(sig: tuple[int, ...]) -> int:
    """Padded tokens of a signature (how the serial path picks its start-up shape)."""
    return sig[0] * (sig[1] + (sig[2] if len(sig) > 2 else 0))


def _fail_all(
    left: list[tuple[int, Unit]], message: str,
    slots: list[tuple[int, Unit]],
    done: list[dict[Unit, Measurement]], *, status: str = "error",
) -> None:
    for slot, unit in left:
        i, _ = slots[slot]
        done[i][unit] = failed(unit[0], message, status="oom" if status == "oom" else "error")


def _assemble(
    job: Job, points: list[tuple[int, Unit]],
    done: dict[Unit, Measurement], header: Header | None,
) -> Measurements:
    h = header or Header(workload=job.workload, config={}, environment={})
    return Measurements(
        workload=h.workload, config=h.config, environment=h.environment,
        measurements=tuple(dataclasses.replace(done[sig], iteration=it) for it, sig in points),
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


class _Bar:
    """One rich progress bar for the whole cluster (a no-op when disabled, or where the
    console shows no live bars)."""

    def __init__(self, enabled: bool, total: int, console: Console | None) -> None:
        self._progress: Any = None
        self._task: Any = None
        if enabled and shows_live(console):
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]profile[/] on Ray"), BarColumn(), MofNCompleteColumn(),
                TimeRemainingColumn(), console=console, transient=False,
            )
            self._task = self._progress.add_task("ray", total=total)

    def __enter__(self) -> _Bar:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, n: int) -> None:
        if self._progress is not None and n:
            self._progress.advance(self._task, n)
