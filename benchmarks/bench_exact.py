"""Exact whole-run totals: time for 10,000 unique signatures, fit against counting.

For each reference workload, a run of 10,000 unique signatures (batch size 2-40 times a
length range; source and target lengths for GNMT) gets its exact FLOPs, bytes and
roofline times from ``exact_totals`` (``auto``: a per-operator polynomial fit verified on
held-out signatures, or counting of every signature when the fit does not verify). The
fit's exactness is checked against ``count_point`` on ``--checks`` random signatures (max
relative difference over every metric), and the counting time is extrapolated from them.
Wall and CPU seconds are both printed: on a shared machine the wall time is an upper bound.

Usage: ``.venv/bin/python benchmarks/bench_exact.py [--quick] [--workloads bert:tiny,...]
[--checks 20] [--render]`` (``--quick``: 1,000 signatures, ``tiny`` presets only, 5 checks). Rows go to
``benchmarks/results/bench_exact.json``; a run of some ``--workloads`` replaces their rows only.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from _results import bench_parser, header, load_stored, run_meta, save_json, write_section
from seqpoint.profiling import count_point, exact_totals
from seqpoint.schedule import IterationSchedule
from seqpoint.workloads import load_workload

CASES = {
    "bert:tiny": ((8, 512), False),
    "gnmt:tiny": ((5, 80), True),
    "deepspeech2:tiny": ((160, 3200), False),
    "bert:small": ((8, 512), False),
}


def unique_run(n: int, lengths: tuple[int, int], tgt: bool, seed: int = 0) -> IterationSchedule:
    """A run whose ``n`` iterations have ``n`` distinct signatures."""
    rng = np.random.default_rng(seed)
    seen: set[tuple[int, int, int]] = set()
    while len(seen) < n:
        b = int(rng.integers(2, 41))
        s = int(rng.integers(*lengths))
        t = int(rng.integers(*lengths)) if tgt else 0
        seen.add((b, s, t))
    rows = np.array(sorted(seen))
    return IterationSchedule.from_columns({"batch_size": rows[:, 0], "seq_len": rows[:, 1],
                                           "tgt_len": rows[:, 2]})


def row(spec: str, r: dict[str, Any]) -> str:
    """One workload's table row."""
    return (f"| {spec} | {r['method']} | {r['counted']:,} | {r['seconds']:.1f} | {r['cpu_s']:.1f} | {r['count_all_s']:.0f} "
            f"| {r['max_rel_diff']:.1e} ({r['checks']}) | {r['note']} | {r['date']} |")


def render(stored: dict[str, Any], n: int) -> str:
    """The RESULTS.md section of the stored rows, with their date, commands and machine."""
    rows = [stored[s] for s in CASES if s in stored]
    run = {"date": max(r["date"] for r in rows), "machine": rows[-1]["machine"],
           "command": "`; `".join(dict.fromkeys(r["command"] for r in rows))} if rows else None
    return "\n".join([header(f"Exact totals of {n:,} unique signatures", run).rstrip(), "",
                      "| workload | method | signatures counted | seconds (wall) | seconds (CPU) "
                      "| counting all (s, extrapolated) | max rel. diff vs count_point (signatures) | note | measured |",
                      "|---|---|---|---|---|---|---|---|---|", *(row(s, stored[s]) for s in CASES if s in stored)])


def main() -> None:
    ap = bench_parser(__doc__, "1,000 signatures, tiny presets", "rewrite the RESULTS.md section from the stored rows")
    ap.add_argument("--workloads", help=f"comma-separated subset of: {', '.join(CASES)} (default: all)")
    ap.add_argument("--checks", type=int, default=20,
                    help="signatures counted with count_point to check the totals against (default: 20)")
    args = ap.parse_args()
    if args.checks < 1:
        raise SystemExit(f"--checks must be an int >= 1. Got {args.checks}.")
    names = [] if args.render else args.workloads.split(",") if args.workloads else list(CASES)
    unknown = [w for w in names if w not in CASES]
    if unknown:
        raise SystemExit(f"--workloads: unknown {', '.join(unknown)}; choose from {', '.join(CASES)}")
    import torch

    torch.set_num_threads(1)
    n, checks = (1000, 5) if args.quick else (10_000, args.checks)
    path, stored = load_stored("bench_exact.json", {})
    for spec in names:
        lengths, tgt = CASES[spec]
        if args.quick and not spec.endswith(":tiny"):
            continue
        wl = load_workload(spec)
        run = unique_run(n, lengths, tgt)
        t0, c0 = time.perf_counter(), time.process_time()
        ex = exact_totals(wl, run)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        worst, t_count = 0.0, time.perf_counter()
        for i in np.random.default_rng(1).choice(n, checks, replace=False):
            counted = count_point(wl, tuple(int(v) for v in ex.signatures[i]))
            for k, v in counted.items():
                if v:
                    worst = max(worst, abs(ex.per_signature[k][i] - v) / abs(v))
        per_count = (time.perf_counter() - t_count) / checks
        stored[spec] = {"method": ex.method, "counted": ex.counted, "seconds": seconds, "cpu_s": cpu,
                        "checks": int(checks), "count_all_s": per_count * n, "max_rel_diff": worst, "note": ex.note,
                        **run_meta(minutes=False)}
        print(f"{spec}: {ex.method}, {ex.counted} counted, {seconds:.1f} s ({cpu:.1f} s CPU) "
              f"(counting all ≈ {per_count * n:.0f} s), max rel. diff {worst:.1e} on {checks} signatures {ex.note}",
              flush=True)
        save_json(path, stored)
    write_section("bench_exact", render(stored, n))

if __name__ == "__main__":
    main()
