"""What an executor is given (:class:`Job`), what one call did (:class:`SweepStats`), and what
one remote task runs: plain functions (wrapped by Ray or submitit at submission) that measure
with a :class:`~seqpoint.profiling.Profiler`, as the serial campaign does."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from seqpoint.exceptions import SeqPointError
from seqpoint.measurements import Measurement
from seqpoint.profiling import CampaignKey, Pending, Plan, ProfileConfig, Profiler, ShippedWorkload
from seqpoint.selection import SeqPoint, SeqPoints
from seqpoint.workloads import Workload, WorkloadRecipe, describe, workload_config

__all__ = ["Job", "PointResult", "SweepStats", "measure_all", "measure_task", "probe_keys"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Job:
    """One workload configuration and the points to profile on it."""

    workload: str | Workload
    """``name[:preset]``, ``module:function`` or ``path/to/file.py:function`` (as for
    ``load_workload``), or a built workload (a remote executor sends it pickled)."""
    overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Workload config fields to change (``{"dtype": "bf16"}``), as ``--set`` gives them."""
    config: ProfileConfig = dataclasses.field(default_factory=ProfileConfig)
    """How each point is measured."""
    points: SeqPoints | Sequence[SeqPoint | Sequence[int]] = ()
    """The SeqPoints (or bare signatures) to profile."""
    device: str | None = None
    """Where its steps run (a remote task asks for a GPU for ``cuda``): default, the
    workload's config (``device``), else the CPU."""

    def recipe(self) -> WorkloadRecipe | None:
        """How a worker builds the workload (None for a built one)."""
        return WorkloadRecipe.of(self.workload, self.overrides) if isinstance(self.workload, str) else None

    def shipped(self, what: str) -> ShippedWorkload:
        """The workload as a remote task gets it (``what`` names the executor in a refusal)."""
        if isinstance(self.workload, str):
            return ShippedWorkload(name=self.workload, recipe=self.recipe())
        return ShippedWorkload.of(self.workload, what=what, fix='use executor = "local"')

    def resources(self) -> tuple[str, int]:
        """``(device, CPUs)`` one task of this job needs: :attr:`device`, else the workload's
        config's, else what its overrides say; a GPU task gets one CPU, a CPU task as many as its
        workload's threads (at least 1: ``threads = 0``, torch's default, follows the task's CPUs)."""
        if isinstance(self.workload, str):
            cfg = workload_config(self.workload, self.overrides)
            found = (str(cfg.device), int(cfg.threads)) if cfg is not None else (
                str(self.overrides.get("device", "cpu")), int(self.overrides.get("threads", 1)))
        else:
            facts = describe(self.workload)
            found = (facts.device, facts.threads)
        device, threads = self.device or found[0] or "cpu", found[1]
        return (device, 1) if device.startswith("cuda") else (device, max(1, threads))


@dataclasses.dataclass(frozen=True, kw_only=True)
class SweepStats:
    """What an executor's last :meth:`~Executor.profile` call did."""

    pairs: int
    """Distinct (job, signature) pairs asked for."""
    cached: int
    """Pairs read from the cache."""
    measured: int
    """Pairs measured (failed ones included)."""
    tasks: int
    """Measuring tasks run (a job with points to measure, or a remote task)."""
    probes: int
    """Probe tasks, which learn a workload's cache key on a worker."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class PointResult:
    """One measured point as a worker returns it to the driver."""

    slot: int
    """The driver's index of this point (unique within one submission)."""
    key: CampaignKey | None
    """None when the workload could not be built (then ``measurement`` says why)."""
    measurement: Measurement


def _build(workload: ShippedWorkload) -> Workload | str:
    """The workload, or why it does not build: ``"config: ..."`` for bad input (a
    :class:`~seqpoint.exceptions.SeqPointError`, which the driver raises), else the error line."""
    try:
        return workload.build()
    except SeqPointError as exc:
        return f"config: {exc}"
    except Exception as exc:  # a user's workload that fails to build fails its points, not the sweep
        return f"{type(exc).__name__}: {exc}"


def _key(built: Workload, shipped: ShippedWorkload) -> CampaignKey:
    return CampaignKey.of(built, source_files=() if shipped.recipe is None else shipped.recipe.source_files)


def probe_keys(workloads: Sequence[ShippedWorkload]) -> list[CampaignKey | str]:
    """Build each workload and return its :class:`CampaignKey` (whose environment names the
    device it built on), without stepping it, or why it does not build (see :func:`_build`)."""
    return [built if isinstance(built := _build(shipped), str) else _key(built, shipped) for shipped in workloads]


def measure_task(workload: ShippedWorkload, config: ProfileConfig,
                 todo: Sequence[tuple[int, Pending]]) -> Iterator[PointResult]:
    """Build the workload once and measure ``todo`` (``(slot, pending)``, the largest first,
    so the start-up runs next to it), yielding each point as soon as it is measured."""
    built = _build(workload)
    if isinstance(built, str):  # every point records why
        for slot, p in todo:
            yield PointResult(slot=slot, key=None, measurement=p.failed(built.removeprefix("config: ")))
        return
    profiler = Profiler(built, recipe=workload.recipe)
    key = _key(built, workload)  # the driver caches: the key includes the code hash
    for slot, p in todo:  # each point a campaign of its own, so that it reaches the driver at once
        one = Plan(key=key, config=config, cache=None, units=((p.point.iteration, p.unit),), cached={}, todo=(p,))
        try:
            m, key_of = profiler.run(one).measurements[0], key
        except SeqPointError as exc:  # a bad signature fails its point only
            m, key_of = p.failed(exc), None
        yield PointResult(slot=slot, key=key_of, measurement=m)


def measure_all(workload: ShippedWorkload, config: ProfileConfig,
                todo: Sequence[tuple[int, Pending]]) -> list[PointResult]:
    """:func:`measure_task`'s points as one list (for an executor whose tasks return once)."""
    return list(measure_task(workload, config, todo))
