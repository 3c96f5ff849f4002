"""The submitit executor: profile jobs as Slurm jobs (submitit is imported only when used).
Without Slurm, submitit runs each task as a local subprocess, the same code path; each task is
a fresh process that returns its points when it ends."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from seqpoint._params import Constraint, Interval, Options, TypeOf, check_params
from seqpoint.exceptions import ConfigError
from seqpoint.executors._remote import RemoteExecutor, Resources
from seqpoint.executors._tasks import PointResult, measure_all, measure_task

__all__ = ["SubmititExecutor"]


class SubmititExecutor(RemoteExecutor):
    """Profile jobs through submitit: on Slurm one job per task; elsewhere one local subprocess.

    ``folder`` holds each job's script, pickles and logs (default a temporary folder); ``cluster`` is
    ``slurm``, ``local`` or None (Slurm when ``sbatch`` is found); ``timeout_min`` each task's limit;
    ``points_per_task`` splits a job (None: one task per job); ``parameters`` more of submitit's
    ``update_parameters`` (``slurm_partition``, ``mem_gb`` ...). A GPU task asks for one GPU and one CPU, a
    CPU task for its workload's threads. The driver alone reads and writes the cache.
    """

    kind = "submitit"
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "cluster": [Options(("slurm", "local")), None], "timeout_min": [Interval(int, 1)],
        "points_per_task": [Interval(int, 1), None],
        "parameters": [TypeOf(Mapping, "a mapping of submitit parameters")]}

    def __init__(self, folder: str | Path | None = None, *, cluster: str | None = None, timeout_min: int = 60,
                 points_per_task: int | None = None, parameters: Mapping[str, Any] | None = None) -> None:
        parameters = dict(parameters or {})
        check_params(type(self).__name__, self._parameter_constraints, locals())
        super().__init__(points_per_task=points_per_task)
        self.folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="seqpoint-submitit-"))
        self.cluster, self.timeout_min, self.parameters = cluster, timeout_min, parameters
        self._executor: Any = None

    def _connect(self) -> None:
        try:
            import submitit
        except ImportError:
            raise ConfigError("The submitit executor needs submitit, which is not installed; install it with "
                              "`pip install 'seqpoint[slurm]'`.") from None
        if self._executor is None:
            try:
                self._executor = submitit.AutoExecutor(folder=self.folder / "%j", cluster=self.cluster)
            except (ValueError, RuntimeError) as exc:
                raise ConfigError(f"submitit cannot start a {self.cluster or 'default'} executor ({exc}); use "
                                  "cluster = \"local\" or run where sbatch is found.") from None
            self._parameters()  # the user's parameters refused now, before anything is submitted

    def _parameters(self, **task: Any) -> None:
        try:
            self._executor.update_parameters(timeout_min=self.timeout_min, **task, **self.parameters)
        except (ValueError, TypeError, NameError) as exc:  # submitit lists the valid parameters
            raise ConfigError(f"submitit refused the task's parameters: {' '.join(str(exc).split())}") from None

    def _submit(self, fn: Callable[..., Any], args: tuple[Any, ...], resources: Resources) -> Any:
        device, cpus = resources
        self._parameters(cpus_per_task=cpus, gpus_per_node=1 if device.startswith("cuda") else 0,
                         name=f"seqpoint-{fn.__name__}")
        # A generator does not travel: a task measures its points, then returns them at once.
        return self._executor.submit(measure_all if fn is measure_task else fn, *args)

    def _value(self, handle: Any) -> Any:
        return handle.result()

    def _results(self, handles: Sequence[Any]) -> Iterator[tuple[Any, PointResult | BaseException | None]]:
        live = list(handles)
        while live:
            ready = [job for job in live if job.done()]
            if not ready:
                time.sleep(0.5)
                continue
            for job in ready:
                live.remove(job)
                try:
                    points: list[PointResult] = job.result()
                except Exception as exc:  # the job failed or was lost: its points record why
                    yield job, exc
                else:
                    yield from ((job, point) for point in points)
                    yield job, None
