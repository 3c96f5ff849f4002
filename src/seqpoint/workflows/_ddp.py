"""The data-parallel validation: a projected DDP run (each step its slowest rank plus the
all-reduce, probed or from the gradient bytes over an interconnect) against the same run on
gloo ranks; ``[profile] timer = "cpu"`` times both sides in CPU time."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from seqpoint._live import Reporter
from seqpoint.exceptions import ConfigError
from seqpoint.measurements import Measurements
from seqpoint.projection import RankProjection, project_ranks
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints
from seqpoint.validation import DDPRun, TruthComparison, check_ddp_device, run_ddp
from seqpoint.workflows._campaign import Campaign
from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._stages import build_schedule, choose_points, validation_schedule

__all__ = ["DDPValidation", "ddp_schedule", "validate_ddp"]


@dataclass(frozen=True, kw_only=True)
class DDPValidation:
    """A projected data-parallel run against the measured one."""

    schedule: IterationSchedule
    """The rank schedule that was projected and run."""
    seqpoints: SeqPoints
    """Points chosen on ``schedule.rank_rows()``."""
    measurements: Measurements
    """The points' measurements."""
    projection: RankProjection
    """Max over ranks plus the all-reduce."""
    ddp: DDPRun
    """The real runs: every rank's time of every step."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Workload and settings, for reports."""

    @property
    def truth(self) -> TruthComparison:
        """The projected time (max over ranks plus the all-reduce) against the measured runs."""
        return TruthComparison(runs_s=tuple(self.ddp.totals_s.tolist()), projected_s=self.projection.total_s)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: the projection's ``data_parallel`` block, the runs and the error."""
        t = self.truth
        return {
            "data_parallel": self.projection.to_dict(),
            "measured": self.ddp.to_dict(),
            "projected_s": t.projected_s,
            "measured_s": t.measured_s,
            "error": t.error,
            "noise_floor": None if math.isnan(t.noise_floor) else t.noise_floor,
            "n_points": len(self.seqpoints.points),
            **self.meta,
        }


def ddp_schedule(cfg: RunConfig) -> IterationSchedule:
    """``[batching]`` replayed with its ``world_size`` over ``[lengths]`` (every rank's row
    of each step), cut to the part ``[validation]`` executes."""
    sec = cfg.batching
    check_ddp_device(cfg.workload.name, dict(cfg.workload.set))
    if sec.world_size < 2:
        raise ConfigError("The data-parallel validation needs [batching] world_size >= 2 "
                          f"(got {sec.world_size}); e.g. --set batching.world_size=2.")
    if sec.schedule is not None:
        raise ConfigError("The data-parallel validation replays [batching] policy; drop [batching] schedule.")
    sched = build_schedule(cfg.lengths, dataclasses.replace(sec, rank=None))
    return validation_schedule(cfg, sched, renumber=False)


def validate_ddp(cfg: RunConfig, *, runs: int = 2, interconnect: str | float | None = None,
                 reporter: Reporter | None = None, timeout_s: float = 600.0) -> DDPValidation:
    """Project a data-parallel run from its SeqPoints and compare with ``runs`` real runs (2 give
    the noise floor), limited to ``timeout_s`` seconds each.

    ``cfg`` has ``[batching] world_size`` >= 2, a reference ``[workload]`` and ``[validation]
    max_iterations`` steps. ``interconnect`` (a name of ``INTERCONNECTS`` or bytes per second)
    projects the all-reduce from the gradient bytes instead of timing it alone on the gloo ranks.
    """
    sched = ddp_schedule(cfg)
    flat = sched.rank_rows()
    _, points = choose_points(cfg.selection, flat)
    measurements = Campaign(cfg, reporter=reporter, schedule=flat).measure(points)
    w = sched.world_size
    sigs = [list(zip(one.batch_size.tolist(), one.seq_len.tolist(), one.tgt_len.tolist(), strict=True))
            for one in (sched.for_rank(r) for r in range(w))]
    # The same clock on both sides: the profile's cpu timer is CPU time too. One more run
    # than asked, the first discarded: it meets every shape cold (oneDNN primitives,
    # allocator), while the projected time_s is the steady-state step.
    first = run_ddp(cfg.workload.name, dict(cfg.workload.set), sigs, runs=runs + 1,
                    warmup=cfg.profile.warmup, timeout_s=timeout_s,
                    timer="cpu" if cfg.profile.timer == "cpu" else "wall")
    ddp = dataclasses.replace(first, rank_s=first.rank_s[1:], wall_s=first.wall_s[1:])
    if interconnect is None:
        proj = project_ranks(sched, points, measurements, allreduce_s=ddp.sync_s)
    else:
        proj = project_ranks(sched, points, measurements, gradient_bytes=ddp.gradient_bytes, interconnect=interconnect)
    return DDPValidation(schedule=sched, seqpoints=points, measurements=measurements, projection=proj, ddp=ddp,
                         meta={"workload": cfg.workload.name, "world_size": w, "n_steps": sched.n_steps,
                               "policy": cfg.batching.policy})
