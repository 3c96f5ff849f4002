"""The Ray executor: profile jobs on an existing Ray cluster or a local one (Ray is imported only when it
connects). Tasks are streaming generators in fresh processes (``max_calls=1``), so every point reaches the
driver as soon as it is measured; a dead worker's task is re-run. Each task asks the cluster for its
workload's CPUs or GPU, and a job the cluster can never give them to is refused before anything runs."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType, TracebackType
from typing import Any, ClassVar

from seqpoint._params import Constraint, Interval, TypeOf, check_params
from seqpoint.exceptions import ConfigError
from seqpoint.executors._remote import RemoteExecutor, Resources, first_line
from seqpoint.executors._tasks import Job, PointResult

__all__ = ["RayExecutor", "check_reachable"]

_INSTALL = "install it with `pip install 'seqpoint[ray]'`"


def _ray_options(resources: Resources) -> dict[str, float]:
    device, cpus = resources
    return {"num_cpus": 1.0, "num_gpus": 1.0} if device.startswith("cuda") else {"num_cpus": float(cpus)}


class RayExecutor(RemoteExecutor):
    """Profile jobs on Ray: one fresh worker process per task, the cache on the driver.

    ``address`` is an existing cluster (``host:port``, ``ray://host:port`` or ``auto``); None starts a local
    Ray of ``num_cpus`` CPUs (default all), or uses the one already joined. ``points_per_task`` splits a job's
    points into tasks (more parallelism, one process start-up each; None: one task per job); ``max_retries``
    re-runs a task whose worker died. The cache key holds the fingerprint of the process that measures, so the
    driver first runs one light probe task per resource request, which builds the workload without stepping it
    (kept for the executor's life).
    """

    kind = "ray"
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "address": [TypeOf(str, "a str"), None], "num_cpus": [Interval(int, 1), None],
        "points_per_task": [Interval(int, 1), None], "max_retries": [Interval(int, 0)]}

    def __init__(self, address: str | None = None, num_cpus: int | None = None, *,
                 points_per_task: int | None = None, max_retries: int = 3) -> None:
        check_params(type(self).__name__, self._parameter_constraints, locals())
        super().__init__(points_per_task=points_per_task)
        self.address, self.num_cpus, self.max_retries = address, num_cpus, max_retries
        self._started = False
        self._ray: ModuleType | None = None

    def connect(self) -> ModuleType:
        """Join the cluster (or start a local Ray) now; :meth:`profile` does it on first use.
        Returns the ``ray`` module; ConfigError when Ray is missing or the address unreachable."""
        try:
            import ray
        except ImportError:
            raise ConfigError(f"The Ray executor needs Ray, which is not installed; {_INSTALL}.") from None
        self._ray = ray
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
            raise ConfigError(f"Cannot connect to the Ray cluster at {self.address or 'a new local Ray'!r} "
                              f"({first_line(exc)}); start one with `ray start --head` or leave --address out "
                              "to run locally.") from None
        self._started = True
        return ray

    def close(self) -> None:
        """Shut down the Ray this executor started (a cluster it joined is left alone)."""
        if self._started and self._ray is not None:
            self._ray.shutdown()
            self._started = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _connect(self) -> None:
        self.connect()

    def _check(self, jobs: Sequence[Job], resources: Sequence[Resources]) -> None:
        """A task asking for more than the whole cluster has would wait forever: refuse it."""
        assert self._ray is not None
        have = self._ray.cluster_resources()
        for job, res in zip(jobs, resources, strict=True):
            options = _ray_options(res)
            for name, ray_name, what in (("num_cpus", "CPU", "CPUs"), ("num_gpus", "GPU", "GPUs")):
                need = options.get(name, 0.0)
                if need > have.get(ray_name, 0.0):
                    raise ConfigError(f"Workload {job.workload} {dict(job.overrides) or ''} needs {need:g} {what} "
                                      f"per task but the Ray cluster has {have.get(ray_name, 0.0):g}; lower its "
                                      "threads, use another device, or add nodes.")

    def _submit(self, fn: Callable[..., Any], args: tuple[Any, ...], resources: Resources) -> Any:
        assert self._ray is not None
        remote = self._ray.remote(max_calls=1)(fn)
        return remote.options(**_ray_options(resources), max_retries=self.max_retries).remote(*args)

    def _value(self, handle: Any) -> Any:
        assert self._ray is not None
        return self._ray.get(handle)

    def _results(self, handles: Sequence[Any]) -> Iterator[tuple[Any, PointResult | BaseException | None]]:
        ray = self._ray
        assert ray is not None
        live = list(handles)
        while live:
            ready, _ = ray.wait(live, num_returns=1)
            for gen in ready:
                try:
                    yield gen, ray.get(next(gen))
                except StopIteration:
                    live.remove(gen)
                    yield gen, None
                except ray.exceptions.RayError as exc:  # retries spent: record, go on
                    live.remove(gen)
                    yield gen, exc


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """One clear line now, instead of Ray retrying an unreachable address for minutes."""
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"The Ray address {address!r} is not host:port (e.g. 10.0.0.5:6379 or "
                          "ray://10.0.0.5:10001); give the head node's address or 'auto'.")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ConfigError(f"Cannot reach a Ray cluster at {address!r} ({exc.strerror or exc}); check the address, "
                          "start one there with `ray start --head`, or leave --address out to run on a local Ray."
                          ) from None
