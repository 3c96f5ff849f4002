"""``seqpoint run``: lengths → schedule → SeqPoints → profile (cached) → projection → report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seqpoint.measurements import environment_manifest
from seqpoint.pipeline._config import RunConfig
from seqpoint.pipeline._folder import RunFolder
from seqpoint.pipeline._stages import (
    build_schedule,
    choose_points,
    load_lengths,
    make_workload,
    measure,
    open_cache,
)
from seqpoint.schedule import IterationSchedule, ScheduleSummary, summarize, write_schedule
from seqpoint.selection import SeqPoints, write_seqpoints

__all__ = ["RunResult", "run"]


@dataclass
class RunResult:
    """Everything a run produced, and where it was written."""

    config: RunConfig
    """The resolved config."""
    folder: RunFolder
    """Where the outputs are."""
    schedule: IterationSchedule
    """The replayed run."""
    summary: ScheduleSummary
    """Its summary."""
    seqpoints: SeqPoints
    """The chosen points."""
    measurements: Any
    """``Measurements`` of the points."""
    projection: Any
    """``Projection`` of the whole run."""
    reduction: float
    """Iterations of the run over iterations executed to profile it."""
    unit: str = "tokens"
    """Unit of sequence lengths (``frames`` or ``tokens``)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.config.name,
            "n_iterations": len(self.schedule),
            "n_points": len(self.seqpoints),
            "reduction_factor": self.reduction,
            "projection": self.projection.to_dict(),
            "summary": self.summary.to_dict(),
            "workload": self.measurements.workload,
        }


def steps_per_point(cfg: RunConfig) -> tuple[int, int, int]:
    """``(warm-up, timed, profiled)`` training steps the harness runs for one point.

    The profiled step is the one run under torch.profiler for the breakdown and memory
    metrics; it is counted so that the reduction factor is honest.
    """
    profiled = 1 if {"breakdown", "memory"} & set(cfg.profile.metrics) else 0
    return cfg.profile.warmup, cfg.profile.repeats, profiled


def executed_steps(n_points: int, cfg: RunConfig) -> int:
    """Training steps the harness executes for ``n_points`` (every step counted)."""
    return n_points * sum(steps_per_point(cfg))


def run(cfg: RunConfig, *, progress: bool = True, console: Any = None) -> RunResult:
    """Run the whole pipeline of ``cfg`` and write its run folder.

    Every file is written as soon as its stage finishes, so an interruption keeps what
    was done; measurements live in the cache and a rerun measures only what is missing.
    """
    folder = RunFolder.new(cfg.name, cfg.report.out)
    folder.write_text("config.toml", cfg.to_toml())
    lengths = load_lengths(cfg.lengths)
    schedule = build_schedule(cfg.batching, lengths)
    write_schedule(schedule, folder.file("schedule.csv"))
    summary = summarize(schedule)
    _, seqpoints = choose_points(cfg.selection, schedule)
    write_seqpoints(seqpoints, folder.file("seqpoints.json"))

    workload = make_workload(cfg.workload)
    folder.write_json("environment.json", environment_manifest())
    from seqpoint.profiling import write_measurements
    from seqpoint.projection import project

    measurements = measure(cfg, workload, seqpoints, cache=open_cache(cfg.profile),
                           progress=progress, console=console)
    write_measurements(measurements, folder.file("measurements.json"))
    projection = project(schedule, seqpoints, measurements, method="weighted")
    folder.write_json("projection.json", projection.to_dict())
    result = RunResult(
        config=cfg, folder=folder, schedule=schedule, summary=summary, seqpoints=seqpoints,
        measurements=measurements, projection=projection,
        reduction=len(schedule) / max(1, executed_steps(len(seqpoints), cfg)),
        unit=getattr(lengths, "unit", "tokens"),
    )
    folder.write_json("result.json", result.to_dict())
    if cfg.report.plots or cfg.report.html:
        from seqpoint.pipeline._report import write_run_report

        write_run_report(result)
    return result
