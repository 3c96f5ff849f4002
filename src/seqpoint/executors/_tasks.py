"""What an executor is given (:class:`Job`), what one call did (:class:`SweepStats`), and
what one worker task runs: plain functions, wrapped with ``ray.remote`` at submission,
that measure with the serial campaign's own :func:`~seqpoint.profiling.measure_plan`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from seqpoint.exceptions import SeqPointError
from seqpoint.measurements import Measurement
from seqpoint.profiling import ProfileConfig
from seqpoint.profiling._campaign import measure_plan
from seqpoint.profiling._plan import CampaignKey, Pending, Plan
from seqpoint.selection import SeqPoint, SeqPoints
from seqpoint.workloads import Workload

__all__ = ["Job", "PointResult", "SweepStats", "measure_task", "probe_keys"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Job:
    """One workload configuration and the points to profile on it."""

    workload: str
    """``name[:preset]`` or ``module:function`` (as for ``load_workload``)."""
    overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Workload config fields to change (``{"dtype": "bf16"}``), as ``--set`` gives them."""
    config: ProfileConfig = dataclasses.field(default_factory=ProfileConfig)
    """How each point is measured."""
    points: SeqPoints | Sequence[SeqPoint | Sequence[int]] = ()
    """The SeqPoints (or bare signatures) to profile."""


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
    """Measuring tasks run (a job with points to measure, or a Ray task)."""
    probes: int
    """Ray's probe tasks, which learn a workload's cache key on a worker."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class PointResult:
    """One measured point as a worker returns it to the driver."""

    slot: int
    """The driver's index of this point (unique within one submission)."""
    key: CampaignKey | None
    """None when the workload could not be built (then ``measurement`` says why)."""
    measurement: Measurement


def _build(spec: str, overrides: Mapping[str, Any]) -> Workload | str:
    """The workload, or why it does not build: ``"config: ..."`` for bad input (a
    :class:`~seqpoint.exceptions.SeqPointError`, which the driver raises), else the error line."""
    from seqpoint.workloads import load_workload

    try:
        return load_workload(spec, dict(overrides))
    except SeqPointError as exc:
        return f"config: {exc}"
    except Exception as exc:  # a user's workload that fails to build fails its points, not the sweep
        return f"{type(exc).__name__}: {exc}"


def probe_keys(jobs: Sequence[tuple[str, Mapping[str, Any]]]) -> list[CampaignKey | str]:
    """Build each workload and return its :class:`CampaignKey`, without stepping it, or why
    it does not build (see :func:`_build`)."""
    return [w if isinstance(w, str) else CampaignKey.of(w) for w in (_build(*job) for job in jobs)]


def measure_task(spec: str, overrides: Mapping[str, Any], config: ProfileConfig,
                 todo: Sequence[tuple[int, Pending]]) -> Iterator[PointResult]:
    """Build the workload once and measure ``todo`` (``(slot, pending)``, the largest first,
    so the start-up runs next to it), yielding each point as soon as it is measured."""
    workload = _build(spec, overrides)
    if isinstance(workload, str):  # every point records why
        for slot, p in todo:
            yield PointResult(slot=slot, key=None, measurement=p.failed(workload.removeprefix("config: ")))
        return
    key = CampaignKey.of(workload)
    for slot, p in todo:  # each point a campaign of its own, so that it reaches the driver at once
        one = Plan(key=key, config=config, cache=None, units=((p.point.iteration, p.unit),), cached={},
                   todo=(p,))
        try:
            m, key_of = measure_plan(workload, one, progress=False).measurements[0], key
        except SeqPointError as exc:  # a bad signature fails its point only
            m, key_of = p.failed(exc), None
        yield PointResult(slot=slot, key=key_of, measurement=m)
