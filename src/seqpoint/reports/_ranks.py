"""The tables of a run projected beyond its profile: a rank schedule's projection (slowest
rank, all-reduce and their shares), the DDP validation (projected against two measured
runs), and the run projected onto another GPU (per category, with its bracket)."""

from __future__ import annotations

import math
from typing import Protocol

from rich.console import Console

from seqpoint.measurements.metrics import breakdown_of
from seqpoint.projection import DeviceProjection, RankProjection
from seqpoint.reports._format import fmt_duration, fmt_pct, fmt_ratio
from seqpoint.reports._tables import Rows, render
from seqpoint.validation import TruthComparison

__all__ = ["DDPValidationView", "ddp_validation_table", "device_projection_table", "print_device_projection",
           "print_rank_projection", "rank_projection_table"]


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


def device_projection_table(dp: DeviceProjection, profiled: dict[str, float]) -> Rows:
    """Rows: each category's projected seconds on the profiled device and on the other one
    (``profiled``: the profiled run's ``breakdown_s`` totals), then the run's totals."""
    target = breakdown_of(dp.projection.totals)
    rows = [["", dp.profiled_on, dp.device, "ratio"]]
    for cat, sec in sorted(breakdown_of(profiled).items(), key=lambda kv: -kv[1]):
        on = target.get(cat, 0.0)
        rows.append([cat, fmt_duration(sec), fmt_duration(on), f"{on / sec:.3f}"])
    lo, hi = dp.interval
    slo, shi = dp.speedup_interval
    rows += [["whole run", fmt_duration(dp.profiled_total), f"{fmt_duration(dp.total)}  ({fmt_duration(lo)} … "
              f"{fmt_duration(hi)})", f"{dp.total / dp.profiled_total:.3f}"],
             [f"speedup on {dp.device}", "", f"{fmt_ratio(dp.speedup)}  ({fmt_ratio(slo)} … {fmt_ratio(shi)})", ""]]
    return rows


def print_device_projection(console: Console, dp: DeviceProjection, profiled: dict[str, float]) -> None:
    """Print the run projected onto another GPU, and what its interval assumes."""
    console.print(render(device_projection_table(dp, profiled),
                         title=f"Projected onto {dp.device} from the SeqPoints profiled on {dp.profiled_on}"))
    console.print(f"Each category scaled by the device model's time of its operators on the two devices; "
                  f"{dp.kept_share:.1%} of the profiled steps (outside the operators) kept as measured. "
                  "The interval takes every category's ratio off by the model's measured error on ratios "
                  "between GPUs, either way.")
