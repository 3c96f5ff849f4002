"""The data-parallel tables of a report: a rank schedule's projection (slowest rank,
all-reduce and their shares) and the DDP validation (projected against two measured runs)."""

from __future__ import annotations

import math
from typing import Protocol

from rich.console import Console

from seqpoint.projection import RankProjection
from seqpoint.reports._format import fmt_duration, fmt_pct
from seqpoint.reports._tables import Rows, render
from seqpoint.validation._compare import TruthComparison

__all__ = ["DDPValidationView", "ddp_validation_table", "print_rank_projection", "rank_projection_table"]


class DDPValidationView(Protocol):
    """What the DDP validation table reads (the workflow's result satisfies it)."""

    @property
    def projection(self) -> RankProjection: ...
    @property
    def truth(self) -> TruthComparison: ...


def _share(fraction: float) -> str:
    return f"{fraction:.1%}"


def rank_projection_table(proj: RankProjection) -> Rows:
    """Rows: the run's time split into balanced compute, straggler wait and all-reduce."""
    total = proj.total_s
    return [["part", "time", "share"],
            ["balanced compute (mean over ranks)", fmt_duration(proj.mean_compute_s),
             _share(proj.mean_compute_s / total if total else 0.0)],
            ["straggler wait (max - mean)", fmt_duration(proj.compute_s - proj.mean_compute_s),
             _share(proj.straggler_share)],
            [f"all-reduce ({proj.allreduce_source}, {fmt_duration(proj.allreduce_s)}/step)",
             fmt_duration(proj.communication_s), _share(proj.communication_share)],
            ["total", fmt_duration(total), _share(1.0)]]


def print_rank_projection(console: Console, proj: RankProjection) -> None:
    """Print the data-parallel table of a rank schedule's projection."""
    console.print(render(rank_projection_table(proj),
                         title=f"data-parallel run: {proj.world_size} ranks, {proj.n_steps:,} steps"))


def ddp_validation_table(result: DDPValidationView) -> Rows:
    """Rows: projected against each measured run, the error and the noise floor."""
    truth = result.truth
    return [["", "time"], ["projected (max over ranks + all-reduce)", fmt_duration(result.projection.total_s)],
            *([f"measured run {i + 1}", fmt_duration(t)] for i, t in enumerate(truth.runs_s)),
            ["error (projected vs mean measured)", fmt_pct(truth.error)],
            ["noise floor (run 1 vs run 2)", "n/a" if math.isnan(truth.noise_floor) else fmt_pct(truth.noise_floor)]]
