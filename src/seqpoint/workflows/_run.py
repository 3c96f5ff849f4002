"""``seqpoint run``: lengths → schedule → SeqPoints → profile (cached) → projection → report.

``run(cfg, log_mlflow=True)`` logs it as one MLflow run (mlflow is optional): the config as params,
the totals, intervals and reduction factor as metrics, the run folder as artifacts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seqpoint._live import Reporter
from seqpoint.exceptions import ConfigError
from seqpoint.executors import Executor
from seqpoint.measurements.metrics import relative_error, time_metric, unit_of
from seqpoint.projection import Projection
from seqpoint.reports import RunRecord
from seqpoint.schedule import summarize
from seqpoint.workflows._campaign import (
    Campaign,
    check_device_projection,
    project_data_parallel,
    project_onto_device,
)
from seqpoint.workflows._config import RunConfig, flat_keys
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._stages import signature_shapes

__all__ = ["RunResult", "run"]


@dataclass(kw_only=True)
class RunResult(RunRecord):
    """Everything a run produced, and where it was written."""

    config: RunConfig
    """The resolved config."""
    folder: RunFolder
    """Where the outputs are."""

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
            "device_projection": None if self.device_projection is None else self.device_projection.to_dict(),
            "summary": self.summary.to_dict(),
            "workload": self.measurements.workload,
        }


def run(cfg: RunConfig, *, reporter: Reporter | None = None, executor: Executor | str | None = None,
        log_mlflow: bool = False) -> RunResult:
    """Run the whole pipeline of ``cfg`` and write its run folder (and report, per ``[report]``);
    ``executor`` measures the SeqPoints (default ``[profile] executor``); ``log_mlflow`` then logs
    the run as one MLflow run (needs mlflow; where, and in which experiment, MLflow's own
    ``MLFLOW_TRACKING_URI`` and ``MLFLOW_EXPERIMENT_NAME`` say)."""
    from seqpoint.reports import write_run_report

    check_device_projection(cfg)  # before anything is measured
    mlflow = _mlflow() if log_mlflow else None
    folder = RunFolder.new(cfg.name, cfg.report.out, command="run")
    c = Campaign(cfg, reporter=reporter, executor=executor, folder=folder)
    measurements = c.measure_seqpoints()
    projection = c.project()
    folder.write_json("projection.json", projection.to_dict())
    metric = time_metric(projection.totals)  # in instructions with that timer: no wall-clock saving
    run_s = projection.totals.get(metric, float("nan")) if unit_of(metric) == "s" else float("nan")
    result = RunResult(
        config=cfg, folder=folder, schedule=c.schedule, summary=summarize(c.schedule),
        seqpoints=c.seqpoints, measurements=measurements, projection=projection,
        reduction=c.reduction, unit=c.unit, saving=c.saving(run_s), exact=_exact(c, projection),
        steps_per_point=cfg.profile.point_steps(),
        campaign_steps=(cfg.profile.processes, cfg.profile.warmup, cfg.profile.protocol_steps(), c.window_steps),
        uncounted=_coverage(c), data_parallel=project_data_parallel(c), device_projection=project_onto_device(c),
    )
    folder.write_json("result.json", result.to_dict())
    if cfg.report.plots or cfg.report.html:
        write_run_report(result, folder.path, title=f"seqpoint run: {cfg.name}", config_text=cfg.to_toml(),
                         subtitle=f"{cfg.workload.name} · {cfg.describe_run()}", plots=cfg.report.plots)
    if mlflow is not None:
        _log_to_mlflow(mlflow, result)
    return result


def _exact(c: Campaign, projection: Projection) -> dict[str, Any] | None:
    """Exact totals of the deterministic metrics measured, with the projection's error on each."""
    families = c.config.profile.families
    if not families & {"flops", "bytes", "roofline"}:
        return None
    from seqpoint.profiling import exact_totals

    ex = exact_totals(c.workload, c.schedule, shapes=signature_shapes(c.workload, c.schedule), state=c.profiler.state)
    out = ex.to_dict()
    out["projection_error"] = {k: relative_error(projection.totals[k], v) for k, v in ex.totals.items()
                               if k in projection.totals and v > 0}
    return out


def _coverage(c: Campaign) -> list[dict[str, str | float]] | None:
    """Timed compute operators of the heaviest SeqPoint that no FLOP formula covers (each
    also a ``SeqPointWarning``); None when FLOPs were not measured."""
    if "flops" not in c.config.profile.families or not c.seqpoints.points:
        return None
    from seqpoint.profiling import counting_coverage

    p = max(c.seqpoints.points, key=lambda q: q.batch_size * (q.seq_len + q.tgt_len))
    found = counting_coverage(c.workload, p.signature, steps=1)
    return [{"name": u.name, "share": u.share, "seconds": u.seconds} for u in found]


#: MLflow's limit on one param value (characters); longer values are cut with a mark.
_PARAM_CHARS = 6000
#: Params per ``log_params`` call (MLflow's batch limit is 100).
_BATCH = 100


def _mlflow_params(result: RunResult) -> dict[str, str]:
    """The resolved config as flat ``section.key`` params (strings, MLflow's type)."""
    out: dict[str, str] = {}
    for name, value in flat_keys(result.config.to_dict()).items():
        text = str(value)
        out[name] = text if len(text) <= _PARAM_CHARS else text[: _PARAM_CHARS - 3] + "..."
    return out


def _mlflow_metrics(result: RunResult) -> dict[str, float]:
    """Totals (``projected.<metric>``; the breakdown is ``projected.breakdown_s.<category>``),
    interval bounds (``interval_low.<metric>``/``interval_high.<metric>``), the reduction
    factor, the run's size, and with ``[projection] device`` the run there
    (``device.<key>.<metric>``, its interval and speedup)."""
    projection = result.projection
    out: dict[str, float] = {"reduction_factor": float(result.reduction), "n_iterations": float(len(result.schedule)),
                             "n_points": float(len(result.seqpoints))}
    for metric, total in projection.totals.items():
        out[f"projected.{metric}"] = float(total)
    for metric, (lo, hi) in projection.interval.items():
        out[f"interval_low.{metric}"] = float(lo)
        out[f"interval_high.{metric}"] = float(hi)
    if (dp := result.device_projection) is not None:
        out.update({f"device.{dp.device}.{dp.metric}": dp.total, f"device.{dp.device}.interval_low": dp.interval[0],
                    f"device.{dp.device}.interval_high": dp.interval[1], f"device.{dp.device}.speedup": dp.speedup})
    return out


def _mlflow() -> Any:
    """The mlflow module; ConfigError when it is not installed."""
    try:
        import mlflow
    except ImportError:
        raise ConfigError("MLflow logging needs mlflow: pip install 'seqpoint[mlflow]' (mlflow-skinny).") from None
    return mlflow


def _log_to_mlflow(mlflow: Any, result: RunResult) -> None:
    """Log ``result`` as one MLflow run, its folder as artifacts."""
    params = list(_mlflow_params(result).items())
    # Inside a user's own active run, seqpoint's run is nested rather than an error.
    with mlflow.start_run(run_name=result.config.name, nested=mlflow.active_run() is not None):
        mlflow.set_tags({"seqpoint.workload": result.measurements.workload,
                         "seqpoint.method": result.projection.method})
        for i in range(0, len(params), _BATCH):
            mlflow.log_params(dict(params[i : i + _BATCH]))
        mlflow.log_metrics(_mlflow_metrics(result))
        mlflow.log_artifacts(str(result.folder.path))
