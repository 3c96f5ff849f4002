"""``seqpoint run``: lengths → schedule → SeqPoints → profile (cached) → projection → report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console

from seqpoint.measurements import Measurements
from seqpoint.projection import Projection
from seqpoint.schedule import IterationSchedule, ScheduleSummary, summarize
from seqpoint.selection import SeqPoints
from seqpoint.workflows._campaign import start_campaign
from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._mlflow import log_to_mlflow

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
    measurements: Measurements
    """Measurements of the points."""
    projection: Projection
    """Projection of the whole run."""
    reduction: float
    """Iterations of the run over iterations executed to profile it."""
    unit: str = "tokens"
    """Unit of sequence lengths (``frames`` or ``tokens``)."""

    @property
    def steps_per_point(self) -> tuple[int, int, int]:
        """``(warm-up, timed, profiled)`` training steps the harness ran for one point."""
        return tuple(self.config.profile.point_steps())  # type: ignore[return-value]

    def to_dict(self) -> dict[str, Any]:
        """What ``result.json`` and ``seqpoint run --json`` hold."""
        return {
            "name": self.config.name,
            "n_iterations": len(self.schedule),
            "n_points": len(self.seqpoints),
            "reduction_factor": self.reduction,
            "projection": self.projection.to_dict(),
            "summary": self.summary.to_dict(),
            "workload": self.measurements.workload,
        }


def run(
    cfg: RunConfig, *, progress: bool = True, console: Console | None = None, log_mlflow: bool = False
) -> RunResult:
    """Run the whole pipeline of ``cfg`` and write its run folder (and report, per ``[report]``).

    With ``log_mlflow`` the run is also logged to MLflow (:func:`log_to_mlflow`, needs
    mlflow), after its folder is complete so the artifacts are the whole folder.
    """
    from seqpoint.projection import project
    from seqpoint.reports import write_run_report

    folder = RunFolder.new(cfg.name, cfg.report.out)
    c = start_campaign(cfg, folder, progress=progress, console=console)
    projection = project(c.schedule, c.seqpoints, c.measurements, method="weighted", context=c.model)
    folder.write_json("projection.json", projection.to_dict())
    result = RunResult(
        config=cfg, folder=folder, schedule=c.schedule, summary=summarize(c.schedule),
        seqpoints=c.seqpoints, measurements=c.measurements, projection=projection,
        reduction=c.reduction, unit=c.unit,
    )
    folder.write_json("result.json", result.to_dict())
    if cfg.report.plots or cfg.report.html:
        write_run_report(result, folder.path, **_page_text(cfg), plots=cfg.report.plots)
    if log_mlflow:
        log_to_mlflow(result)
    return result


def _page_text(cfg: RunConfig) -> dict[str, str]:
    return {"title": f"seqpoint run: {cfg.name}",
            "subtitle": f"{cfg.workload.name} · {cfg.describe_run()}",
            "config_text": cfg.to_toml()}
