import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from seqpoint.exceptions import ConfigError
from seqpoint.profiling import ProfileConfig, Profiler
from seqpoint.workloads import load_workload

ROOT = Path(__file__).resolve().parents[2]


def test_example_user_workload_loads_by_its_file_path(monkeypatch):
    # The working folder is never imported from implicitly (issue 13): the example is named
    # by its file, or imported as a module only when its folder is on sys.path.
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p or ".").resolve() != ROOT])
    with pytest.raises(ConfigError, match="cannot import module 'examples.custom_workload'"):
        load_workload("examples.custom_workload:build")
    w = load_workload("examples/custom_workload.py:build", {"hidden": "8"})
    assert w.config.hidden == 8
    batch = w.make_batch((2, 12, 0))
    losses = [w.step(batch) for _ in range(5)]
    assert losses[-1] < losses[0]  # it trains
    m = Profiler(w).point((2, 12, 0), ProfileConfig(warmup=1, repeats=2))
    assert m.ok and m.metrics["time_s"] > 0
