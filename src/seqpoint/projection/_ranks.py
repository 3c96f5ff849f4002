"""Projection of a data-parallel run: each step costs its slowest rank (per-rank-row costs from
:func:`fitted_costs` over ``schedule.rank_rows()``) plus the all-reduce, measured or the ring's
``2 (N - 1) / N`` × gradient bytes over an interconnect's bandwidth (:data:`INTERCONNECTS`). The
all-reduce is not overlapped with backward: the total is an upper bound where DDP's buckets do."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from seqpoint._params import Interval, check_params
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.measurements import STEADY_TIME, Measurement, Measurements
from seqpoint.projection._model import ScheduleModel, fitted_costs
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints

__all__ = ["INTERCONNECTS", "RankProjection", "project_ranks"]

#: Bus bandwidth of one direction, bytes per second, of named interconnects: nominal figures
#: (NCCL's measured bus bandwidth can be lower, or higher with NVLink SHARP on NVSwitch);
#: measure yours with nccl-tests and pass the number where it matters.
INTERCONNECTS: dict[str, float] = {
    "gloo-loopback": 1.0e9,  # gloo over the loopback device on a CPU host: memory copies and TCP, ~1 GB/s
    "pcie4": 25.0e9,  # PCIe 4.0 x16: 32 GB/s raw, about 25 GB/s achieved
    "pcie5": 50.0e9,  # PCIe 5.0 x16
    "nvlink3": 300.0e9,  # NVLink 3 (A100 SXM): 600 GB/s both directions, 300 GB/s each way
    "nvlink4": 450.0e9,  # NVLink 4 (H100 SXM): 900 GB/s both directions, 450 GB/s each way
    "ib-200g": 25.0e9, "ib-400g": 50.0e9,  # InfiniBand HDR / NDR, one port: 200 and 400 Gb/s
}

_BANDWIDTH = Interval(float, 0, None, closed="neither", word="a number")


def _allreduce_time(gradient_bytes: int, world_size: int, interconnect: str | float) -> float:
    """Seconds of one ring all-reduce (``2 (N-1)/N`` × the gradient bytes per rank) over
    ``interconnect``: a name in :data:`INTERCONNECTS` or bytes per second (checked > 0)."""
    if isinstance(interconnect, str) and interconnect not in INTERCONNECTS:
        raise ConfigError(f"Unknown interconnect {interconnect!r}; use one of {', '.join(INTERCONNECTS)} "
                          "or a bandwidth in bytes per second.")
    if not isinstance(interconnect, str):
        check_params("", {"interconnect": [_BANDWIDTH]}, {"interconnect": interconnect})
    bandwidth = INTERCONNECTS[interconnect] if isinstance(interconnect, str) else float(interconnect)
    return 2.0 * (world_size - 1) / world_size * float(gradient_bytes) / bandwidth


@dataclass(frozen=True, kw_only=True)
class RankProjection:
    """A data-parallel run's projected time, with its straggler and communication shares."""

    n_steps: int
    """Training steps (iterations) of the run."""
    world_size: int
    metric: str
    """The projected metric (seconds per step, ``time_s``)."""
    compute_s: float
    """Σ over steps of the slowest rank's cost."""
    mean_compute_s: float
    """Σ over steps of the mean rank's cost (the time with perfectly balanced ranks)."""
    allreduce_s: float
    """One step's all-reduce, seconds."""
    allreduce_source: str
    """Where the all-reduce time came from: ``measured`` or an interconnect's name/bandwidth."""

    @property
    def communication_s(self) -> float:
        """All-reduce time over the run."""
        return self.allreduce_s * self.n_steps

    @property
    def total_s(self) -> float:
        """Projected run time: Σ (max over ranks + all-reduce)."""
        return self.compute_s + self.communication_s

    @property
    def straggler_share(self) -> float:
        """Σ (max − mean over ranks) / total: the share spent waiting for the slowest rank."""
        return (self.compute_s - self.mean_compute_s) / self.total_s if self.total_s else 0.0

    @property
    def communication_share(self) -> float:
        """All-reduce time / total."""
        return self.communication_s / self.total_s if self.total_s else 0.0

    def to_dict(self) -> dict[str, object]:
        """JSON form, added under ``data_parallel`` beside a projection's ``projected``."""
        return {"world_size": self.world_size, "n_steps": self.n_steps, "metric": self.metric,
                "total_s": self.total_s, "compute_s": self.compute_s, "mean_compute_s": self.mean_compute_s,
                "allreduce_s": self.allreduce_s, "communication_s": self.communication_s,
                "allreduce_source": self.allreduce_source, "straggler_share": self.straggler_share,
                "communication_share": self.communication_share}


def project_ranks(
    schedule: IterationSchedule, seqpoints: SeqPoints, measurements: Measurements | Iterable[Measurement], *,
    metric: str = STEADY_TIME, allreduce_s: float | None = None, gradient_bytes: int | None = None,
    interconnect: str | float | None = None, context: ScheduleModel | None = None,
) -> RankProjection:
    """Project a data-parallel run (``schedule`` with a ``rank`` column, or a single-process one: world size 1)
    from SeqPoints chosen on ``schedule.rank_rows()`` and their ``measurements`` (matched by signature) of the
    per-step ``metric`` (seconds: ``time_s``). The all-reduce is ``allreduce_s`` (measured, seconds per step) or
    else ``gradient_bytes`` over an ``interconnect`` (a name or bytes per second); neither (above one rank) or
    both is a ConfigError. ``context``: the model of ``schedule.rank_rows()``, when already built."""
    w = schedule.world_size
    flat = schedule.rank_rows()
    if allreduce_s is not None and interconnect is not None:
        raise ConfigError("Give the all-reduce either measured (allreduce_s) or as an interconnect, not both.")
    if w == 1:
        comm, source = 0.0, "none (one rank)"
    elif allreduce_s is not None:
        check_params("", {"allreduce_s": [Interval(float, 0, None)]}, {"allreduce_s": allreduce_s})
        comm, source = float(allreduce_s), "measured"
    elif interconnect is not None and gradient_bytes is not None:
        comm = _allreduce_time(gradient_bytes, w, interconnect)
        source = interconnect if isinstance(interconnect, str) else f"{float(interconnect):.3g} B/s"
    else:
        raise ConfigError(f"A data-parallel run of {w} ranks needs the all-reduce time: give allreduce_s "
                          "(measured), or gradient_bytes and an interconnect "
                          f"({', '.join(INTERCONNECTS)} or bytes per second).")
    costs = fitted_costs(flat, seqpoints, measurements, metric, context=context)
    if not np.all(np.isfinite(costs)):
        raise InputError(f"The fitted {metric!r} of some rank rows is not finite; check the measurements.")
    per_step = costs.reshape(-1, w)  # step-major, rank-minor: a rank schedule's row order
    return RankProjection(
        n_steps=per_step.shape[0], world_size=w, metric=metric, compute_s=float(per_step.max(axis=1).sum()),
        mean_compute_s=float(per_step.mean(axis=1).sum()), allreduce_s=comm, allreduce_source=source)
