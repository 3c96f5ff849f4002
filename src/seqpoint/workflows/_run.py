"""``seqpoint run``: lengths → schedule → SeqPoints → profile (cached) → projection → report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console

from seqpoint.measurements import Measurements
from seqpoint.measurements._metrics import time_metric
from seqpoint.projection import Projection, RankProjection
from seqpoint.schedule import IterationSchedule, ScheduleSummary, summarize
from seqpoint.selection import SeqPoints
from seqpoint.validation import ProfilingSaving
from seqpoint.workflows._campaign import Campaign, project_data_parallel, start_campaign
from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._mlflow import log_to_mlflow
from seqpoint.workflows._stages import signature_shapes

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
    saving: ProfilingSaving | None = None
    """The saving in steps, wall clock and tokens (beside :attr:`reduction`)."""
    exact: dict[str, Any] | None = None
    """Exact deterministic totals of the whole run (``ExactTotals.to_dict()``), when
    deterministic metrics were measured: the figures the SeqPoint projection is held to."""
    uncounted: list[dict[str, Any]] | None = None
    """Timed compute operators with no FLOP formula (``name``, ``share`` of step time),
    checked on the heaviest SeqPoint when FLOPs were measured; empty when all are counted."""
    data_parallel: RankProjection | None = None
    """A data-parallel run's projection: each step its slowest rank plus the all-reduce
    (:attr:`projection` then sums every rank's work, one rank row per iteration)."""

    @property
    def steps_per_point(self) -> tuple[int, int, int]:
        """``(warm-up, timed, profiled)`` training steps the harness ran for one point."""
        return tuple(self.config.profile.point_steps())  # type: ignore[return-value]

    @property
    def campaign_steps(self) -> tuple[int, int, int, int]:
        """``(worker processes, warm-up steps per point in each, their start-up and
        drift-check steps, cold-step window steps)``: how :attr:`steps_per_point` is made
        up, and what the campaign ran besides the points (counted in :attr:`reduction`)."""
        profile = self.config.profile
        return profile.processes, profile.warmup, profile.protocol_steps(), profile.window_steps

    def to_dict(self) -> dict[str, Any]:
        """What ``result.json`` and ``seqpoint run --json`` hold."""
        return {
            "name": self.config.name,
            "n_iterations": len(self.schedule),
            "n_points": len(self.seqpoints),
            "reduction_factor": self.reduction,
            "saving": None if self.saving is None else self.saving.to_dict(),
            "exact_totals": self.exact,
            "uncounted_operators": self.uncounted,
            "projection": self.projection.to_dict(),
            "data_parallel": None if self.data_parallel is None else self.data_parallel.to_dict(),
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

    folder = RunFolder.new(cfg.name, cfg.report.out, command="run")
    c = start_campaign(cfg, folder, progress=progress, console=console)
    sec = c.config.projection
    projection = project(c.schedule, c.seqpoints, c.measurements, method=sec.method, confidence=sec.confidence,
                         context=c.model)
    folder.write_json("projection.json", projection.to_dict())
    run_s = projection.totals.get(time_metric(projection.totals), float("nan"))
    result = RunResult(
        config=cfg, folder=folder, schedule=c.schedule, summary=summarize(c.schedule),
        seqpoints=c.seqpoints, measurements=c.measurements, projection=projection,
        reduction=c.reduction, unit=c.unit, saving=c.saving(run_s), exact=_exact(c, projection),
        uncounted=_coverage(c), data_parallel=project_data_parallel(c),
    )
    folder.write_json("result.json", result.to_dict())
    if cfg.report.plots or cfg.report.html:
        write_run_report(result, folder.path, **_page_text(cfg), plots=cfg.report.plots)
    if log_mlflow:
        log_to_mlflow(result)
    return result


def _exact(c: Campaign, projection: Projection) -> dict[str, Any] | None:
    """Exact totals of the deterministic metrics measured, with the projection's error on each."""
    families = c.config.profile.families
    if not families & {"flops", "bytes", "roofline"}:
        return None
    from seqpoint.profiling import exact_totals

    ex = exact_totals(c.workload, c.schedule, shapes=signature_shapes(c.workload, c.schedule))
    out = ex.to_dict()
    out["projection_error"] = {
        k: (projection.totals[k] - v) / v for k, v in ex.totals.items()
        if k in projection.totals and v > 0
    }
    return out


def _coverage(c: Campaign) -> list[dict[str, Any]] | None:
    """Timed compute operators of the heaviest SeqPoint that no FLOP formula covers (each
    also a ``SeqPointWarning``); None when FLOPs were not measured."""
    if "flops" not in c.config.profile.families or not c.seqpoints.points:
        return None
    from seqpoint.profiling import counting_coverage

    p = max(c.seqpoints.points, key=lambda q: q.batch_size * (q.seq_len + q.tgt_len))
    found = counting_coverage(c.workload, p.signature, steps=1)
    return [{"name": u.name, "share": u.share, "seconds": u.seconds} for u in found]


def _page_text(cfg: RunConfig) -> dict[str, str]:
    return {"title": f"seqpoint run: {cfg.name}",
            "subtitle": f"{cfg.workload.name} · {cfg.describe_run()}",
            "config_text": cfg.to_toml()}
