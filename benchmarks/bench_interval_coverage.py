"""Does the printed 95% interval hold the measured full run, validation after validation?
(issue 34, item 7)

One config (``bert:small``, ``group_by_length`` B=8, 160 iterations, default ``[profile]``
and ``[validation]`` runs), validated ``--repeats`` times, each in a fresh process with an
empty cache, as a user running ``seqpoint validate`` on a shared machine would. Each row
keeps the projection's own interval (the points' noise and the selection), the interval
``validate`` holds the full runs to (grown by the machine's drift since profiling, read on
the check point re-timed after each full run), and whether each holds the measured mean.

Usage::

    .venv/bin/python benchmarks/bench_interval_coverage.py [--repeats 10] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paper_cases import in_fresh_process
from seqpoint.exceptions import SeqPointWarning
from seqpoint.workflows import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    ReportSection,
    RunConfig,
    ValidationSection,
    WorkloadSection,
    validate,
)


def config(root: Path, seed: int) -> RunConfig:
    """1,280 WikiText-2 lines (a seeded subset) in ``group_by_length`` batches of 8: 160
    iterations of ``bert:small`` at one thread; ``[profile]`` as a user leaves it."""
    return RunConfig(
        name="coverage",
        lengths=LengthsSection(source="bundled:wikitext-2-valid", max_samples=1280, seed=seed),
        batching=BatchingSection(policy="group_by_length", params={"batch_size": 8}, seed=seed),
        workload=WorkloadSection(name="bert:small", set={"threads": 1}),
        profile=ProfileSection(cache=str(root / "cache.sqlite")),
        validation=ValidationSection(baselines=(), steady_truth=False),
        report=ReportSection(out=str(root / "out"), plots=False, html=False),
    )


def one(repeat: int, seed: int = 0) -> dict[str, Any]:
    """One validation, in this (fresh) process, with an empty cache."""
    with tempfile.TemporaryDirectory(prefix="coverage-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", SeqPointWarning)
        t0 = time.perf_counter()
        res = validate(config(Path(tmp), seed), progress=False, exact=False, ks=(10,))
    truth, drift = res.truth, res.truth.drift
    metric = res.to_dict()["projected_metric"]
    lo, hi = res.projection.interval[metric]
    return {"repeat": repeat, "n_iterations": len(res.schedule), "measured_s": truth.measured_s,
            "runs_s": list(truth.runs_s), "noise_floor": truth.noise_floor, "projected_s": truth.projected_s,
            "error": truth.error, "own_interval_s": [lo, hi], "own_holds": bool(lo <= truth.measured_s <= hi),
            "interval_s": list(truth.interval_s), "holds": truth.within,
            "drift": None if drift is None else drift.change,
            "drift_se": None if drift is None else drift.standard_error, "wall_s": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = []
    for r in range(args.repeats):
        rows.append(in_fresh_process(one, r))
        row = rows[-1]
        print(f"{r + 1}/{args.repeats}: error {100 * row['error']:+.2f}% (floor {100 * row['noise_floor']:.2f}%), "
              f"drift {100 * (row['drift'] or 0):+.2f}% ± {100 * (row['drift_se'] or 0):.2f}%, "
              f"own interval {'holds' if row['own_holds'] else 'misses'}, "
              f"with drift {'holds' if row['holds'] else 'misses'} ({row['wall_s']:.0f} s)", flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
    print(f"held: {sum(r['holds'] for r in rows)} of {len(rows)} "
          f"(the projection's own interval: {sum(r['own_holds'] for r in rows)})")


if __name__ == "__main__":
    main()
