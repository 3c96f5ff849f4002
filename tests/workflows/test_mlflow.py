"""MLflow logging of a run: params, metrics (totals, intervals, breakdown), artifacts."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from seqpoint.exceptions import ConfigError
from seqpoint.workflows import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    ReportSection,
    SelectionSection,
    log_to_mlflow,
    mlflow_metrics,
    mlflow_params,
    run,
)


@pytest.fixture(scope="module")
def result(tmp_path_factory, tiny_config):
    tmp = tmp_path_factory.mktemp("mlflow")
    cfg = tiny_config(tmp, name="ml", lengths=LengthsSection(source="bundled:librispeech-dev-clean", max_samples=48),
                      batching=BatchingSection(policy="sortagrad", epochs=1, params={"batch_size": 16}),
                      selection=SelectionSection(n_points=2),
                      profile=ProfileSection(warmup=1, repeats=2, metrics=("time", "breakdown"),
                                             cache=str(tmp / "cache.sqlite")),
                      report=ReportSection(out=str(tmp / "run"), plots=False, html=False))
    return run(cfg)


def test_params_and_metrics_are_flat(result) -> None:
    params = mlflow_params(result)
    assert params["workload.name"] == "deepspeech2:tiny"
    assert params["selection.n_points"] == "2"
    metrics = mlflow_metrics(result)
    assert metrics["projected.time_s"] == result.projection.totals["time_s"]
    assert metrics["interval_low.time_s"] <= metrics["projected.time_s"] <= metrics["interval_high.time_s"]
    assert any(k.startswith("projected.breakdown_s.") for k in metrics)
    assert metrics["reduction_factor"] == result.reduction


def test_logs_one_run_to_a_local_store(result, tmp_path, monkeypatch) -> None:
    mlflow = pytest.importorskip("mlflow")
    # mlflow 3 keeps the file store behind this switch (it asks for a database store).
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    run_id = log_to_mlflow(result, tracking_uri=tmp_path.as_uri(), experiment="seqpoint-test")
    logged = mlflow.get_run(run_id)
    assert logged.data.params["workload.name"] == "deepspeech2:tiny"
    assert logged.data.metrics["projected.time_s"] == pytest.approx(result.projection.totals["time_s"])
    assert logged.data.tags["seqpoint.workload"] == result.measurements.workload
    names = {a.path for a in mlflow.MlflowClient().list_artifacts(run_id)}
    assert "projection.json" in names and "result.json" in names


def test_without_mlflow_the_error_says_what_to_install(result, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow now raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'seqpoint\[mlflow\]'"):
        log_to_mlflow(result)
