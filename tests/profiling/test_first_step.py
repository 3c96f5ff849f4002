import pytest

pytest.importorskip("torch")

from seqpoint.profiling import ProfileConfig, profile_points
from seqpoint.workloads import load_workload


def test_first_step_of_new_shape_recorded_once(capfd):
    w = load_workload("deepspeech2:tiny", overrides={"threads": 1})
    cfg = ProfileConfig(warmup=1, repeats=2, metrics=("time", "breakdown"))
    first = profile_points(w, [(2, 40, 0), (2, 56, 0)], cfg, progress=False)
    assert all("time_s_first" in m.metrics for m in first.measurements)
    assert all(m.metrics["time_s_first"] > 0 for m in first.measurements)
    again = profile_points(w, [(2, 40, 0)], cfg, progress=False)
    # the shape was already run in this process: its first step is not cold any more
    assert "time_s_first" not in again.measurements[0].metrics
    # kineto's start/stop lines are kept off stderr
    assert "USDT" not in capfd.readouterr().err


def test_no_first_step_without_warmup():
    w = load_workload("deepspeech2:tiny", overrides={"threads": 1})
    ms = profile_points(w, [(2, 48, 0)], ProfileConfig(warmup=0, repeats=1), progress=False)
    assert "time_s_first" not in ms.measurements[0].metrics
