"""Run every benchmark, one after another (the GPU commands, ``bench_gpu*.py``, need a device).

Each runs in its own process (the longest last), rewrites its section of benchmarks/RESULTS.md
and prints its figures; this prints how long each took and fails if any failed. One at a time
on purpose: timings taken beside another benchmark would measure the contention.

Usage: ``.venv/bin/python benchmarks/run_all.py [--quick] [--only NAME[,NAME]]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = (
    "bench_exact", "bench_default_selection", "bench_proxy", "bench_scale", "bench_ddp", "bench_user_jobs",
    "bench_interval_coverage", "bench_cold", "bench_speedups", "bench_device_model", "paper_table", "bench_instructions",
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="pass --quick to every benchmark")
    ap.add_argument("--only", help=f"comma-separated subset of: {', '.join(BENCHMARKS)}")
    args = ap.parse_args()
    names = [n.strip() for n in args.only.split(",")] if args.only else list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    done: list[tuple[str, int, float]] = []
    for name in names:
        cmd = [sys.executable, str(HERE / f"{name}.py"), *(["--quick"] if args.quick else [])]
        print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, check=False).returncode
        done.append((name, rc, time.perf_counter() - t0))
    print("\n== summary")
    for name, rc, secs in done:
        print(f"{name:16s} {'ok' if rc == 0 else f'FAILED (exit {rc})':16s} {secs / 60:6.1f} min")
    return 0 if all(rc == 0 for _, rc, _ in done) else 1


if __name__ == "__main__":
    sys.exit(main())
