"""``benchmarks/bench_gpu_speedups.py``'s CPU dry run: one row of each kind (a speedup pair,
the breakdown, torch.compile with its recompilations counted from torch's log), the JSON,
the RESULTS rows, a resumed call that skips them, and a row the budget cannot fit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "bench_gpu_speedups.py"
PAIR, BREAKDOWN, COMPILE = ("pair/bert-wiki-grouped/bf16", "breakdown/bert-wiki-grouped/fp32",
                            "compile/bert-wiki-grouped/default")
MICRO = "pair/bert-wiki-grouped/micro_batches"


def _dry_run(out: Path, rows: str, budget_s: float) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH"))
                                                       if p)}
    env.pop("OUT", None)
    done = subprocess.run([sys.executable, str(SCRIPT), "--device", "cpu", "--quick", "--rows", rows,
                           "--budget-s", str(budget_s), "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_cpu_dry_run_writes_each_kind_of_row_and_resumes(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "speedups"
    _dry_run(out, f"{PAIR},{BREAKDOWN},{COMPILE}", 300)
    record = json.loads((out / "bench_gpu_speedups.json").read_text())
    rows = {r["key"]: r for r in record["rows"]}
    assert list(rows) == [PAIR, BREAKDOWN, COMPILE] and not record["not_run"]
    assert all(r["device"] == "cpu" and r["timer"] == "wall" and r["k"] == 3 for r in rows.values())

    pair = rows[PAIR]
    assert pair["change"] == {"dtype": "bf16"} and len(pair["runs_a_s"]) == len(pair["runs_b_s"]) == 1
    lo, hi = pair["interval"]
    assert lo <= pair["projected"] <= hi and pair["measured"] > 0 and pair["steady_projected"] > 0
    assert pair["interval_holds"] == (lo <= pair["measured"] <= hi)
    assert pair["error"] == pytest.approx(pair["projected"] / pair["measured"] - 1)

    bd = rows[BREAKDOWN]
    assert bd["signatures_profiled"] == bd["n_signatures"] > 0
    for shares in (bd["projected_shares"], bd["measured_shares"]):
        assert sum(shares.values()) == pytest.approx(1.0) and "batched_gemm" in shares
    assert bd["max_gap_pp"] is not None and 0 <= bd["max_gap_pp"] < 100

    comp = rows[COMPILE]
    assert comp["backend"] == "eager" and comp["count_note"].startswith("the last processes")
    # Each full run compiles the warm-up shape, then recompiles once the schedule's first
    # shape differs (torch's automatic dynamic shapes): counted in each full-run process.
    assert len(comp["full_run_processes"]) == 1  # one run on --quick
    assert all(p["compiles"] >= 2 and p["recompiles"] >= 1 and p["compile_s"] > 0 for p in comp["full_run_processes"])
    assert comp["profiling_process"]["compiles"] >= 1 and len(comp["spikes"]) == 1
    assert comp["unexplained_s"] == pytest.approx(comp["measured_s"] - comp["run_time_s"])
    # The recompile a full run pays after its start-up is projected once (compile_s).
    assert comp["compile_graphs"] >= 1 and comp["compile_s"] > 0
    assert comp["run_time_s"] == pytest.approx(comp["steady_s"] + comp["cold_s"] + comp["compile_s"])

    table = (out / "RESULTS-rows.md").read_text()
    assert "| bert-wiki-grouped | fp32 -> bf16 autocast |" in table
    assert "| bert-wiki-grouped | default (eager) |" in table and "| bert-wiki-grouped | fp32 |" in table
    assert sorted(p.name for p in out.iterdir()) == ["RESULTS-rows.md", "bench_gpu_speedups.json"]

    stdout = _dry_run(out, f"{PAIR},{BREAKDOWN},{COMPILE},{MICRO}", 2)
    assert stdout.count("already measured, skipped") == 3
    again = json.loads((out / "bench_gpu_speedups.json").read_text())
    assert again["rows"] == record["rows"] and again["not_run"][MICRO].startswith("budget: ")
    assert f"{MICRO} (budget: " in (out / "RESULTS-rows.md").read_text()
