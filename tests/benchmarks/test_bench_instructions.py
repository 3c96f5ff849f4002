"""bench_instructions.py's table from recorded rows (its counted runs take hours under
valgrind: ``make bench`` runs them, ``make bench-quick`` a 12-iteration one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_recorded_rows_render_into_the_results_section() -> None:
    rows = ROOT / "benchmarks" / "results" / "bench_instructions.json"
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_instructions.py"), "--quick",
                           "--render", str(rows)], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "| gnmt-wmt-bucket | 42 (11) | -0.099% | +3.230% |" in done.stdout
    quick = (ROOT / "benchmarks" / "RESULTS.quick.md").read_text()
    assert "<!-- BEGIN instructions_quick -->" in quick and "| gnmt-wmt-bucket | 42 (11)" in quick
