"""What a Ray task asks of the cluster, and whether the cluster can give it: resources per
job, a feasibility check against the cluster's totals, a reachability check of an address."""

from __future__ import annotations

import socket
from types import ModuleType

from seqpoint.exceptions import ConfigError
from seqpoint.executors._tasks import Job

__all__ = ["check_feasible", "check_reachable", "job_resources"]


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
