"""MLflow logging of a run's projection (:func:`log_to_mlflow`); mlflow is optional.

One MLflow run per seqpoint run: the resolved config as params (``section.key``), the
projected totals, their intervals, the operation-category breakdown and the reduction
factor as metrics, and the run folder (config, environment, SeqPoints, measurements,
projection, report) as artifacts. The tracking server is MLflow's own choice
(``MLFLOW_TRACKING_URI``, else ``./mlruns``) unless one is given.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sized
from typing import Any, Protocol

from seqpoint.exceptions import ConfigError
from seqpoint.measurements import Measurements
from seqpoint.projection import Projection
from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._folder import RunFolder

__all__ = ["log_to_mlflow", "mlflow_metrics", "mlflow_params"]


class RunResult(Protocol):
    """What is logged of a run: :class:`seqpoint.workflows.RunResult` satisfies it (a
    protocol, so ``run`` can call the logger without the two modules importing each other)."""

    @property
    def config(self) -> RunConfig: ...
    @property
    def folder(self) -> RunFolder: ...
    @property
    def schedule(self) -> Sized: ...
    @property
    def seqpoints(self) -> Sized: ...
    @property
    def measurements(self) -> Measurements: ...
    @property
    def projection(self) -> Projection: ...
    @property
    def reduction(self) -> float: ...

#: MLflow's limit on one param value (characters); longer values are cut with a mark.
_PARAM_CHARS = 6000
#: Params per ``log_params`` call (MLflow's batch limit is 100).
_BATCH = 100


def _flatten(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from _flatten(value, name + ".")
        else:
            yield name, value


def mlflow_params(result: RunResult) -> dict[str, str]:
    """The resolved config as flat ``section.key`` params (strings, MLflow's type)."""
    out: dict[str, str] = {}
    for name, value in _flatten(result.config.to_dict()):
        text = str(value)
        out[name] = text if len(text) <= _PARAM_CHARS else text[: _PARAM_CHARS - 3] + "..."
    return out


def mlflow_metrics(result: RunResult) -> dict[str, float]:
    """Totals (``projected.<metric>``; the breakdown is ``projected.breakdown_s.<category>``),
    interval bounds (``interval_low.<metric>``/``interval_high.<metric>``), the reduction
    factor, and the run's size."""
    projection = result.projection
    out: dict[str, float] = {
        "reduction_factor": float(result.reduction),
        "n_iterations": float(len(result.schedule)),
        "n_points": float(len(result.seqpoints)),
    }
    for metric, total in projection.totals.items():
        out[f"projected.{metric}"] = float(total)
    for metric, (lo, hi) in projection.interval.items():
        out[f"interval_low.{metric}"] = float(lo)
        out[f"interval_high.{metric}"] = float(hi)
    return out


def log_to_mlflow(
    result: RunResult, *, tracking_uri: str | None = None, experiment: str | None = None
) -> str:
    """Log ``result`` as one MLflow run (its folder as artifacts) at ``tracking_uri`` in
    ``experiment`` (MLflow's defaults when None); returns its run id. ConfigError when
    mlflow is not installed."""
    try:
        import mlflow
    except ImportError:
        raise ConfigError(
            "MLflow logging needs mlflow: pip install 'seqpoint[mlflow]' (mlflow-skinny)."
        ) from None
    if tracking_uri is not None:
        mlflow.set_tracking_uri(tracking_uri)
    if experiment is not None:
        mlflow.set_experiment(experiment)
    params = list(mlflow_params(result).items())
    # Inside a user's own active run, seqpoint's run is nested rather than an error.
    with mlflow.start_run(run_name=result.config.name, nested=mlflow.active_run() is not None) as run:
        mlflow.set_tags({"seqpoint.workload": result.measurements.workload,
                         "seqpoint.method": result.projection.method})
        for i in range(0, len(params), _BATCH):
            mlflow.log_params(dict(params[i : i + _BATCH]))
        mlflow.log_metrics(mlflow_metrics(result))
        mlflow.log_artifacts(str(result.folder.path))
        return str(run.info.run_id)
