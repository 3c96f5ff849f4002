"""In-run against isolated cost of a step, both timed in one process (issue 14).

The paper table's ``small`` rows said a step inside the full run costs 5-7% more than
the same shape repeated in isolation on one CPU, and 1-2% on another. There the full runs
and the isolated steps ran in different processes, minutes apart, on a machine whose
speed moves 5-8% in ten minutes. This benchmark takes the process and the time apart: in
**one** fresh process (glibc keeping freed memory, as the paper table times), it runs

1. the case's measured schedule in order (pass A: a fresh batch per step, every step timed),
2. every unique signature in isolation, as the harness does (2 warm-up steps, then 4 timed
   repeats of the same batch),
3. the schedule in order again (pass B),
4. the isolated steps again, with a fresh batch for every repeat (a new batch's memory is
   what an in-run step gets),

and compares each shape's warm in-run steps (every occurrence but its first) with its
isolated median. If the in-run ratio is ~1 here, the overhead the table saw is the
machine and the process, not the sequence.

    .venv/bin/python benchmarks/bench_in_run.py [--cases gnmt-wmt-bucket-small,...] [--quick]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paper_cases import ALLOCATOR_ENV, Scale, run_config, select_cases
from _paper_measured import child_env
from _results import header, quick_mode, write_section

RESULTS = Path(__file__).with_name("results")
DEFAULT = "gnmt-wmt-bucket-small,bert-wiki-grouped-small"
WARMUP, REPEATS = 2, 4


def measure(name: str, quick: bool) -> dict[str, Any]:
    """The four phases of the module docstring for case ``name``, in this process."""
    from seqpoint.workflows import build_schedule, load_lengths, validation_schedule
    from seqpoint.workloads import load_workload

    case = select_cases(name, "tiny,small")[0]
    cfg = run_config(case, Scale.make(quick), Path("/nonexistent"), Path("/nonexistent"))
    schedule = validation_schedule(cfg, build_schedule(cfg.batching, load_lengths(cfg.lengths)))
    sigs = [tuple(int(v) for v in row) for row in schedule.signature_matrix()]
    w = load_workload(case.workload, overrides=dict(case.overrides))
    uniq = sorted(set(sigs))
    big = max(uniq, key=lambda s: s[0] * s[1])
    decoy = w.make_batch((big[0], big[1] + 1, *big[2:]))  # process start-up on an unseen shape
    for _ in range(3):
        w.step(decoy)

    def timed(batch: Any) -> float:
        t0 = time.perf_counter()
        w.step(batch)
        return time.perf_counter() - t0

    def in_run() -> list[float]:
        return [timed(w.make_batch(s)) for s in sigs]

    def isolated(fresh: bool) -> dict[str, list[float]]:
        out = {}
        for s in uniq:
            batch = w.make_batch(s)
            for _ in range(WARMUP):
                w.step(batch)
            out[json.dumps(s)] = [timed(w.make_batch(s) if fresh else batch) for _ in range(REPEATS)]
        return out

    t0 = time.perf_counter()
    phases: dict[str, Any] = {}
    starts = {}
    for phase, fn in (("in_run_a", in_run), ("isolated", lambda: isolated(False)), ("in_run_b", in_run),
                      ("isolated_fresh_batch", lambda: isolated(True))):
        starts[phase] = time.perf_counter() - t0
        phases[phase] = fn()
    return {"case": case.name, "workload": case.workload, "signatures": [list(s) for s in sigs],
            "phases": phases, "phase_start_s": starts}


def analyse(data: dict[str, Any]) -> dict[str, float]:
    """Totals and per-shape ratios of the in-run passes against the isolated medians."""
    sigs = [tuple(s) for s in data["signatures"]]
    iso = {tuple(json.loads(k)): float(np.median(v)) for k, v in data["phases"]["isolated"].items()}
    fresh = {tuple(json.loads(k)): float(np.median(v)) for k, v in data["phases"]["isolated_fresh_batch"].items()}
    steady = float(sum(iso[s] for s in sigs))
    out = {"n_iterations": len(sigs), "n_shapes": len(iso), "isolated_sum_s": steady,
           "fresh_batch_over_isolated": float(np.median([fresh[s] / iso[s] for s in iso]))}
    for p in ("a", "b"):
        times = data["phases"][f"in_run_{p}"]
        warm: dict[tuple[int, ...], list[float]] = {}
        seen: set[tuple[int, ...]] = set()
        for s, t in zip(sigs, times, strict=True):
            if s in seen:
                warm.setdefault(s, []).append(t)
            seen.add(s)
        ratios = np.array([np.median(v) / iso[s] for s, v in warm.items()])
        out[f"pass_{p}_s"] = float(sum(times))
        out[f"pass_{p}_over_isolated"] = float(sum(times)) / steady
        out[f"pass_{p}_warm_ratio_median"] = float(np.median(ratios))
        out[f"pass_{p}_warm_ratio_min"] = float(ratios.min())
        out[f"pass_{p}_warm_ratio_max"] = float(ratios.max())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=DEFAULT, help=f"paper-table cases (default {DEFAULT})")
    ap.add_argument("--quick", action="store_true", help="the cases' --quick schedules (a smoke run)")
    ap.add_argument("--child", help=argparse.SUPPRESS)  # internal: measure this case here
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        Path(args.out).write_text(json.dumps(measure(args.child, args.quick)))
        return

    rows = []
    t0 = time.perf_counter()
    with child_env(ALLOCATOR_ENV), tempfile.TemporaryDirectory(prefix="bench-in-run-") as tmp:
        for name in [n.strip() for n in args.cases.split(",") if n.strip()]:
            out = Path(tmp) / f"{name}.json"
            cmd = [sys.executable, __file__, "--child", name, "--out", str(out), *(["--quick"] if args.quick else [])]
            subprocess.run(cmd, check=True)  # a fresh process per case (glibc reads MALLOC_* at start-up)
            row = {"case": name, **analyse(json.loads(out.read_text()))}
            rows.append(row)
            print(json.dumps(row), flush=True)
    wall = time.perf_counter() - t0
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / ("in_run_quick.json" if quick_mode() else "in_run.json")).write_text(
        json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": rows,
                    "wall_s": wall}, indent=1) + "\n")
    lines = [header("In-run against isolated, both in one process (issue 14)"),
             f"- wall time {wall / 60:.1f} min; glibc keeps freed memory (`ALLOCATOR_ENV`), 1 thread",
             "", "One fresh process per case: pass A (the schedule in order, a fresh batch per step), every "
             f"shape isolated ({WARMUP} warm-up + {REPEATS} repeats of one batch), pass B (in order again), "
             "and the isolated steps again with a fresh batch per repeat. *Warm in-run / isolated* is the "
             "median over shapes of (median of the shape's in-run steps after its first) / (its isolated "
             "median).", "",
             "| case | iterations, shapes | pass A / isolated sum | pass B / isolated sum "
             "| warm in-run / isolated, A (min–max) | B (min–max) | fresh batch / same batch |",
             "|---|---|---:|---:|---|---|---:|"]
    for r in rows:
        lines.append(
            f"| `{r['case']}` | {r['n_iterations']}, {r['n_shapes']} | {r['pass_a_over_isolated']:.4f} "
            f"| {r['pass_b_over_isolated']:.4f} | {r['pass_a_warm_ratio_median']:.4f} "
            f"({r['pass_a_warm_ratio_min']:.3f}–{r['pass_a_warm_ratio_max']:.3f}) "
            f"| {r['pass_b_warm_ratio_median']:.4f} ({r['pass_b_warm_ratio_min']:.3f}–"
            f"{r['pass_b_warm_ratio_max']:.3f}) | {r['fresh_batch_over_isolated']:.4f} |")
    write_section("in_run", "\n".join(lines))


if __name__ == "__main__":
    main()
