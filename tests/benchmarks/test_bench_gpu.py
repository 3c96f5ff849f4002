"""``benchmarks/bench_gpu.py``'s CPU dry run: what the GPU run would trip on first (imports,
arguments, writing the JSON and the RESULTS rows, resuming) shows on a CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_gpu.py"


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
