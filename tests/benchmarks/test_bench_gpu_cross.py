"""``benchmarks/bench_gpu_cross.py``'s CPU dry run, twice, then ``--compare`` on the two
folders as if an H100 and an H200 had written them: what the two GPU calls and the
comparison here would trip on first (imports, arguments, files, the three rows) shows on a CPU."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_gpu_cross.py"


def _script(*args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH"))
                                                       if p)}
    env.pop("OUT", None)
    done = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=240, check=False)
    assert done.returncode == 0 or not check, done.stderr[-2000:]
    return done


@pytest.mark.slow
def test_two_cpu_dry_runs_compare_as_h100_and_h200(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from seqpoint.devices import GPU_SPECS

    folders = []
    for name in ("a", "b"):
        _script("--device", "cpu", "--quick", "--cases", "gnmt-wmt-bucket", "--budget-s", "200",
                "--out", tmp_path / name)
        folders.append(tmp_path / name / "cpu")  # the device key of a CPU
    run = folders[0] / "gnmt-wmt-bucket"
    assert sorted(p.name for p in run.iterdir()) == ["measurements.json", "result.json", "schedule.csv",
                                                     "seqpoints.json"]
    row = json.loads((run / "result.json").read_text())
    assert row["device_key"] == "cpu" and row["timer"] == "wall" and row["k"] == 2 and len(row["runs_s"]) == 2
    assert row["interval_s"][0] <= row["projected_s"] <= row["interval_s"][1]

    refused = _script("--compare", *folders, "--out", tmp_path / "cmp", check=False)
    assert refused.returncode != 0 and "--as h100,h200" in refused.stderr

    stdout = _script("--compare", *folders, "--as", "h100,h200", "--out", tmp_path / "cmp").stdout
    result = json.loads((tmp_path / "cmp" / "cross_compare.json").read_text())
    [case] = result["cases"]
    assert (case["from"], case["to"]) == ("h100", "h200") and case["same_schedule"] and case["same_seqpoints"]
    rows = {json.loads((f / "gnmt-wmt-bucket" / "result.json").read_text())["measured_s"] for f in folders}
    assert case["a"]["measured_speedup"] == pytest.approx(case["measured_a_s"] / case["measured_b_s"])
    assert {case["measured_a_s"], case["measured_b_s"]} == rows
    # (b): B's run from A's measurements; at k = 2 its own projection is what it scales.
    b = case["b"]
    lo, hi = b["interval_s"]
    # a noisy k = 2 interval's low end is cut at 0 (no run takes less)
    assert all(math.isfinite(x) for x in (b["projected_s"], lo, hi)) and 0 <= lo <= b["projected_s"] <= hi
    assert b["profiled_total_s"] == pytest.approx(row["projected_s"], rel=1e-9)
    # (c): the same compute and more bandwidth: the roofline gets faster by at most the bandwidth ratio.
    bandwidth = GPU_SPECS["h200"].bandwidth / GPU_SPECS["h100"].bandwidth
    assert 1.0 <= case["c"]["roofline_speedup"] <= bandwidth * (1 + 1e-9) and case["c"]["roofline_s"] > 0
    table = (tmp_path / "cmp" / "RESULTS-cross.md").read_text()
    assert "| gnmt-wmt-bucket h100 → h200 |" in table and table in stdout and not result["missing"]
