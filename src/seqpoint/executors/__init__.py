"""Executors of profiling campaigns and sweeps: serially in this process, on Ray, or as Slurm jobs through
submitit (local subprocesses without Slurm).

An executor profiles a list of :class:`Job` (a workload configuration and its points) and returns one
:class:`~seqpoint.measurements.Measurements` per job. Each plans a job as the serial campaign does (what is
cached, what is left, one cache key); the driver alone reads and writes the measurement cache. Importing this
package imports neither torch, ray nor submitit.
"""

from seqpoint.executors._local import EXECUTORS, Executor, LocalExecutor, make_executor
from seqpoint.executors._ray import RayExecutor
from seqpoint.executors._submitit import SubmititExecutor
from seqpoint.executors._tasks import Job, SweepStats

__all__ = ["EXECUTORS", "Executor", "Job", "LocalExecutor", "RayExecutor", "SubmititExecutor", "SweepStats",
           "make_executor"]
