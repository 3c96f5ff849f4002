"""``benchmarks/bench_gpu.py``'s CPU dry run: what the GPU run would trip on first (imports,
arguments, writing the JSON and the RESULTS rows, resuming) shows on a CPU."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_gpu.py"


def _script() -> object:
    spec = importlib.util.spec_from_file_location("bench_gpu", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_plan_measures_ds2_again_with_cudnn_benchmark(tmp_path: Path) -> None:
    bench: Any = _script()
    rows = bench.plan(("ds2-librispeech", "gnmt-wmt-bucket"), False)
    small = [k for k in rows if "-paper/" not in k]
    assert small == ["ds2-librispeech-small/fp32", "ds2-librispeech-small/bf16", "gnmt-wmt-bucket-small/fp32",
                     "gnmt-wmt-bucket-small/bf16", "ds2-librispeech-small/fp32/cudnn-benchmark",
                     "ds2-librispeech-small/bf16/cudnn-benchmark"]
    assert [k for k in rows if k.endswith("cudnn-benchmark")] == small[-2:]  # small preset only
    case, dtype, cudnn = rows["ds2-librispeech-small/bf16/cudnn-benchmark"]
    cfg = bench.row_config(case, dtype, "cuda", False, tmp_path, cudnn)
    assert cfg.workload.set["cudnn_benchmark"] is True and cfg.workload.set["dtype"] == "bf16"
    assert cfg.name.endswith("-cudnn-benchmark")
    case, dtype, cudnn = rows["ds2-librispeech-small/bf16"]
    assert not cudnn and "cudnn_benchmark" not in bench.row_config(case, dtype, "cuda", False, tmp_path).workload.set
    assert list(bench.plan(("ds2-librispeech",), True))[-1] == "ds2-librispeech/bf16/cudnn-benchmark"


def _dry_run(out: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH"))
                                                       if p)}
    env.pop("OUT", None)
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--quick", "--cases", "gnmt-wmt-bucket",
                           "--budget-s", "300", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_cpu_dry_run_writes_rows_and_resumes(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "gpu"
    _dry_run(out)
    record = json.loads((out / "bench_gpu.json").read_text())
    rows = record["rows"]
    assert [r["key"] for r in rows] == ["gnmt-wmt-bucket/fp32", "gnmt-wmt-bucket/bf16"]
    for r in rows:
        assert r["device"] == "cpu" and r["timer"] == "wall" and r["k"] == 3
        assert len(r["runs_s"]) == 2 and all(t > 0 for t in r["runs_s"])
        lo, hi = r["interval_s"]
        assert lo <= r["projected_s"] <= hi and r["first_error"] is not None and r["reduction_steps"] > 0
    assert record["gpu_tests"]["summary"] == "skipped: --device cpu" and not record["not_run"]
    assert record["machine"]["torch"] and record["machine"]["nvidia_smi"]  # the query's CSV, or why it is absent
    table = (out / "RESULTS-rows.md").read_text()
    assert table.count("| gnmt-wmt-bucket |") == 2 and "| fp32 |" in table and "| bf16 |" in table
    assert sorted(p.name for p in out.iterdir()) == ["RESULTS-rows.md", "bench_gpu.json"]  # $OUT stays small

    stdout = _dry_run(out)
    assert stdout.count("already measured, skipped") == 2
    again = json.loads((out / "bench_gpu.json").read_text())
    assert again["rows"] == rows
    assert (out / "RESULTS-rows.md").read_text().count("| gnmt-wmt-bucket |") == 2
