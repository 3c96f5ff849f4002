"""Kineto chrome traces per point: files named by iteration and signature, weight in the metadata."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from seqpoint.exceptions import ConfigError  # noqa: E402
from seqpoint.profiling import ProfileConfig, Profiler  # noqa: E402


def test_unset_option_leaves_the_cache_key_unchanged() -> None:
    assert "kineto_dir" not in ProfileConfig().to_dict()
    assert ProfileConfig(kineto_dir="k").to_dict()["kineto_dir"] == "k"
    assert ProfileConfig().point_steps().profiled == 0
    assert ProfileConfig(kineto_dir="k", breakdown_steps=2).point_steps().profiled == 2


def test_bad_folder_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'kineto_dir' parameter of ProfileConfig must be a folder path"):
        ProfileConfig(kineto_dir=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("metrics", [("time",), ("time", "breakdown")])
def test_each_point_writes_a_chrome_trace_with_its_weight(ds2, tmp_path, metrics) -> None:
    cfg = ProfileConfig(warmup=1, repeats=1, metrics=metrics, kineto_dir=str(tmp_path / "k"))
    m = Profiler(ds2).point((2, 24, 0), cfg, iteration=5, weight=88.0)
    assert m.ok
    path = tmp_path / "k" / "it5_b2_s24_t0.pt.trace.json"  # iteration and signature; TensorBoard's suffix
    trace = json.loads(path.read_text())
    assert trace["seqpoint_weight"] == 88.0
    assert trace["seqpoint_signature"] == [2, 24, 0]
    assert trace["seqpoint_iteration"] == 5
    assert any(ev.get("name", "").startswith("aten::") for ev in trace["traceEvents"])
    assert ("breakdown" in metrics) == bool(m.breakdown_s)


def test_no_trace_without_the_option(ds2, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Profiler(ds2).point((2, 24, 0), ProfileConfig(warmup=1, repeats=1), iteration=5, weight=3.0)
    assert not list(tmp_path.rglob("*.json"))
