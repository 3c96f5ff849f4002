"""MLflow logging of a run (``run(cfg, log_mlflow=True)``): params, metrics (totals,
intervals, breakdown), artifacts."""

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
    run,
)


@pytest.fixture(scope="module")
def config(tmp_path_factory, tiny_config):
    tmp = tmp_path_factory.mktemp("mlflow")
    return tiny_config(tmp, name="ml", lengths=LengthsSection(source="bundled:librispeech-dev-clean", max_samples=48),
                       batching=BatchingSection(policy="sortagrad", epochs=1, params={"batch_size": 16}),
                       selection=SelectionSection(n_points=2),
                       profile=ProfileSection(warmup=1, repeats=2, metrics=("time", "breakdown"),
                                              cache=str(tmp / "cache.sqlite")),
                       report=ReportSection(out=str(tmp / "run"), plots=False, html=False))


def test_params_and_metrics_are_flat(config, fake_mlflow) -> None:
    result = run(config, log_mlflow=True)
    assert fake_mlflow.runs == [("ml", False)] and fake_mlflow.artifacts == [str(result.folder.path)]
    assert fake_mlflow.tags["seqpoint.workload"] == result.measurements.workload
    params = fake_mlflow.params
    assert params["workload.name"] == "deepspeech2:tiny"
    assert params["selection.n_points"] == "2"
    metrics = fake_mlflow.metrics
    assert metrics["projected.time_s"] == result.projection.totals["time_s"]
    assert metrics["interval_low.time_s"] <= metrics["projected.time_s"] <= metrics["interval_high.time_s"]
    assert any(k.startswith("projected.breakdown_s.") for k in metrics)
    assert metrics["reduction_factor"] == result.reduction


def test_logs_one_run_to_a_local_store(config, tmp_path, monkeypatch) -> None:
    mlflow = pytest.importorskip("mlflow")
    # mlflow 3 keeps the file store behind this switch (it asks for a database store).
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", tmp_path.as_uri())
    result = run(config, log_mlflow=True)
    (logged,) = mlflow.MlflowClient().search_runs(["0"])  # the default experiment
    assert logged.data.params["workload.name"] == "deepspeech2:tiny"
    assert logged.data.metrics["projected.time_s"] == pytest.approx(result.projection.totals["time_s"])
    assert logged.data.tags["seqpoint.workload"] == result.measurements.workload
    names = {a.path for a in mlflow.MlflowClient().list_artifacts(logged.info.run_id)}
    assert "projection.json" in names and "result.json" in names


def test_without_mlflow_the_error_says_what_to_install_before_anything_runs(config, tmp_path, monkeypatch) -> None:
    import dataclasses
    import sys

    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow now raises ImportError
    cfg = dataclasses.replace(config, report=dataclasses.replace(config.report, out=str(tmp_path / "run")))
    with pytest.raises(ConfigError, match=r"pip install 'seqpoint\[mlflow\]'"):
        run(cfg, log_mlflow=True)
    assert not (tmp_path / "run").exists()
