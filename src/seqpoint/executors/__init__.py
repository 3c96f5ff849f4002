"""Executors of profiling campaigns and sweeps: serial in this process, or on Ray.

An executor profiles a list of :class:`Job` (a workload configuration and its points)
and returns one :class:`~seqpoint.measurements.Measurements` per job. Both plan a job as
the serial campaign does (what is cached, what is left, one cache key); the driver alone
reads and writes the measurement cache. Importing this package imports neither torch
nor ray; :class:`RayExecutor` imports ray when it connects. ``job_resources`` (what a
job asks of a Ray cluster) is imported for the tests, not in ``__all__``.
"""

from seqpoint.executors._local import EXECUTORS, Executor, LocalExecutor, make_executor
from seqpoint.executors._ray import RayExecutor
from seqpoint.executors._ray import job_resources as job_resources
from seqpoint.executors._tasks import Job, SweepStats

__all__ = ["EXECUTORS", "Executor", "Job", "LocalExecutor", "RayExecutor", "SweepStats",
           "make_executor"]
