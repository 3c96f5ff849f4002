"""Executors of profiling campaigns and sweeps: serial in this process, or on Ray.

An executor profiles a list of :class:`Job` (a workload configuration and its points)
and returns one :class:`~seqpoint.measurements.Measurements` per job. The driver alone
reads and writes the measurement cache. Importing this package imports neither torch
nor ray; :class:`RayExecutor` imports ray when it connects.
"""

from seqpoint.executors._cluster import SweepStats, job_resources
from seqpoint.executors._local import Executor, LocalExecutor
from seqpoint.executors._ray import RayExecutor
from seqpoint.executors._tasks import Job

__all__ = ["Executor", "Job", "LocalExecutor", "RayExecutor", "SweepStats", "job_resources"]
