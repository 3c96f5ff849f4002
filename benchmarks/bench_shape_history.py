"""A large step's cost against how many other shapes the process ran before it (issue 14, item 5).

`seqpoint speedup --validate` on the bundled BERT config found fp32 -> bf16 projected at
about 1.0x and measured at 0.76-0.89x: inside a run, large bf16 steps cost about twice
the harness's time for them. The harness measures each point in a process that has run
its start-up shape and a few other points; a run's step comes after many shapes.

This times, in one fresh process per (dtype, K): the start-up shape (one token longer
than the longest shape, as the harness does), then K other lengths once each (seeded,
between 20 and 300 tokens), then the first and second steps of each target shape. glibc
is told to keep freed memory (``ALLOCATOR_ENV``), so page faults are not what it sees.

Usage::

    .venv/bin/python benchmarks/bench_shape_history.py [--quick] [--ks 0,10,40,100]
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paper_cases import ALLOCATOR_ENV
from _paper_measured import child_env, in_fresh_process
from _results import bench_parser, header, write_section

RESULTS = Path(__file__).with_name("results")
WORKLOAD = "bert:tiny"
BATCH = 16
TARGETS = (342, 402, 183)
DECOY = 431


def measure(dtype: str, k: int, targets: tuple[int, ...]) -> dict[str, Any]:
    """First and second step (seconds) of each target after the decoy and ``k`` other shapes."""
    from seqpoint.workloads import load_workload

    w = load_workload(WORKLOAD, overrides={"threads": 1, "optimizer": "lamb", "dtype": dtype})
    decoy = w.make_batch((BATCH, DECOY, 0))
    for _ in range(3):
        w.step(decoy)
    lengths = random.Random(0).sample([t for t in range(20, 300) if t not in targets], k)
    for t in lengths:
        w.step(w.make_batch((BATCH, t, 0)))
    out = {}
    for t in targets:
        batch = w.make_batch((BATCH, t, 0))
        steps = []
        for _ in range(2):
            t0 = time.perf_counter()
            w.step(batch)
            steps.append(time.perf_counter() - t0)
        out[str(t)] = steps
    return out


def render(data: dict[str, Any]) -> str:
    lines = [header("A large step's cost after K other shapes (issue 14)"), "",
             f"`{WORKLOAD}`, batch {BATCH}, 1 thread, glibc keeping freed memory; one fresh process per "
             f"row: start-up on {DECOY} tokens (as the harness), K other lengths once each, then each target "
             "shape's first and second step (ms).", "",
             "| dtype | K | " + " | ".join(f"{t} tokens: first / second" for t in data["targets"]) + " |",
             "|---|---:|" + "---|" * len(data["targets"])]
    for row in data["rows"]:
        cells = [f"{1e3 * row['steps'][str(t)][0]:.1f} / {1e3 * row['steps'][str(t)][1]:.1f}" for t in data["targets"]]
        lines.append(f"| {row['dtype']} | {row['k']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = bench_parser(__doc__, quick="K = 0 and 10, one target")
    ap.add_argument("--ks", default="0,10,40,100", help="numbers of other shapes before the targets")
    args = ap.parse_args()
    ks = [0, 10] if args.quick else [int(k) for k in args.ks.split(",")]
    targets = TARGETS[:1] if args.quick else TARGETS
    rows = []
    with child_env(ALLOCATOR_ENV):
        for dtype in ("fp32", "bf16"):
            for k in ks:
                steps = in_fresh_process(measure, dtype, k, targets)
                rows.append({"dtype": dtype, "k": k, "steps": steps})
                shown = ", ".join(f"{t}: {1e3 * s[0]:.1f}/{1e3 * s[1]:.1f} ms" for t, s in steps.items())
                print(f"{dtype} K={k}: {shown}", flush=True)
    data = {"targets": list(targets), "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / ("shape_history_quick.json" if args.quick else "shape_history.json")).write_text(
        json.dumps(data, indent=1) + "\n")
    print(f"RESULTS.md section written: {write_section('shape_history', render(data))}")


if __name__ == "__main__":
    main()
