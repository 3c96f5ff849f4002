"""Does the printed 95% interval hold the measured full run, validation after validation?
(issue 34, item 7; issue 45, item 5: with the default in-sequence window and its in-run gap)

One config (``bert:small``, ``group_by_length`` B=8, 160 iterations, default ``[profile]``
and ``[validation]`` runs), validated ``--repeats`` times, each in a fresh process with an
empty cache, as a user running ``seqpoint validate`` on a shared machine would. Each row
keeps the projection's own interval (the points' noise and the selection), the interval
``validate`` holds the full runs to (grown by the machine's drift since profiling, read on
the check point re-timed after each full run), and whether each holds the measured mean.
Rows go to ``benchmarks/results/bench_interval_coverage.json`` after every repeat.

Usage: ``.venv/bin/python benchmarks/bench_interval_coverage.py [--repeats 10] [--resume] [--quick] [--render]``
(``--resume``: keep the stored rows of this code's config and run until ``--repeats`` of them)
"""

from __future__ import annotations

import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from _paper_cases import in_fresh_process
from _results import bench_parser, header, load_stored, run_meta, save_json, table, write_section
from seqpoint.exceptions import SeqPointWarning
from seqpoint.workflows import RunConfig, validate


def config(root: Path, seed: int, quick: bool = False) -> RunConfig:
    """1,280 WikiText-2 lines (a seeded subset) in ``group_by_length`` batches of 8: 160
    iterations of ``bert:small`` (``bert:tiny`` on --quick) at one thread; ``[profile]`` as a
    user leaves it."""
    return RunConfig.from_dict({
        "name": "coverage",
        "lengths": {"source": "bundled:wikitext-2-valid", "max_samples": 1280, "seed": seed},
        "batching": {"policy": "group_by_length", "params": {"batch_size": 8}, "seed": seed},
        "workload": {"name": "bert:tiny" if quick else "bert:small", "set": {"threads": 1}},
        "profile": {"cache": str(root / "cache.sqlite")},
        "validation": {"baselines": [], "steady_truth": False},
        "report": {"out": str(root / "out"), "plots": False, "html": False},
    })


def one(repeat: int, quick: bool) -> dict[str, Any]:
    """One validation, in this (fresh) process, with an empty cache."""
    with (tempfile.TemporaryDirectory(prefix="coverage-") as tmp,
          warnings.catch_warnings(action="ignore", category=SeqPointWarning)):
        t0 = time.perf_counter()
        res = validate(config(Path(tmp), 0, quick), exact=False, ks=(10,))
    truth, drift = res.truth, res.truth.drift
    metric = res.to_dict()["projected_metric"]
    lo, hi = res.projection.interval[metric]
    gap = res.projection.in_run_gap / res.projection.totals[metric]
    return {"repeat": repeat, "n_iterations": len(res.schedule), "measured_s": truth.measured_s,
            "runs_s": list(truth.runs_s), "noise_floor": truth.noise_floor, "projected_s": truth.projected_s,
            "error": truth.error, "own_interval_s": [lo, hi], "own_holds": bool(lo <= truth.measured_s <= hi),
            "interval_s": list(truth.interval_s), "holds": truth.within,
            "drift": None if drift is None else drift.change,
            "drift_se": None if drift is None else drift.standard_error, "in_run_ratio": res.projection.in_run_ratio,
            "in_run_gap": gap, "wall_s": time.perf_counter() - t0}


def render(stored: dict[str, Any]) -> str:
    """The RESULTS.md section of the stored rows."""
    rows, own, printed = [], [], []
    for r in stored["rows"]:
        (lo, hi), (plo, phi) = r["own_interval_s"], r["interval_s"]
        own.append((hi - lo) / 2 / r["projected_s"])
        printed.append((phi - plo) / 2 / r["projected_s"])
        drift = "—" if r["drift"] is None else f"{100 * r['drift']:+.1f}% ± {100 * r['drift_se']:.1f}%"
        ratio = r.get("in_run_ratio")
        gap = "—" if ratio is None else f"± {100 * r['in_run_gap']:.2f}% (r {ratio:.3f})"
        rows.append([str(r["repeat"] + 1), f"{r['measured_s']:.1f} s", f"{100 * r['noise_floor']:.2f}%",
                     f"{r['projected_s']:.1f} s", f"{100 * r['error']:+.2f}%", drift, gap, f"{lo:.1f} … {hi:.1f} s",
                     "yes" if r["own_holds"] else "**no**", f"{plo:.1f} … {phi:.1f} s", "yes" if r["holds"] else "**no**"])
    n, med = len(rows), (statistics.median(printed), statistics.median(own))
    return "\n".join([
        header("The printed interval against repeated validations, with the drift check (issue 34, item 7)",
               stored["meta"]).rstrip(), "",
        f"`seqpoint validate` on one config ({stored['meta']['workload']}, `group_by_length` B=8, "
        f"{stored['rows'][0]['n_iterations']} iterations of WikiText-2, default `[profile]`, two full runs), each "
        "repeat in a fresh process with an empty cache. *Own interval*: the projection's (selection, the "
        "points' noise and, with the in-sequence window of the run's first steps, the in-run gap `|r − 1|`); "
        "*printed*: the one `validate` holds the full runs to, grown by the drift the check point reads after "
        "each full run.", "",
        *table(["repeat", "measured (mean of 2)", "noise floor", "projected", "error", "drift on the check point",
                "in-run gap", "own interval", "holds", "printed interval", "holds"], rows),
        f"The printed interval held the measured run in **{sum(r['holds'] for r in stored['rows'])} of {n}** "
        f"(the projection's own: {sum(r['own_holds'] for r in stored['rows'])} of {n}); median half-width "
        f"±{100 * med[0]:.0f}% (own ±{100 * med[1]:.0f}%).",
        *(f"\nRepeat {r['repeat'] + 1}: {r['note']}" for r in stored["rows"] if r.get("note"))])


def main() -> None:
    ap = bench_parser(__doc__, "one repeat on bert:tiny (minutes)", "rewrite the RESULTS.md section from the stored rows")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--resume", action="store_true", help="keep the stored rows; run until --repeats of them")
    args = ap.parse_args()
    path, stored = load_stored("bench_interval_coverage.json")
    if not args.render:
        kept = stored["rows"] if args.resume and stored else []
        meta = {**run_meta(), "workload": "`bert:tiny`" if args.quick else "`bert:small`"}
        first = stored["meta"]["date"].split(" … ")[0] if kept else meta["date"]
        stored = {"meta": meta, "rows": kept}
        for r in range(len(kept), 1 if args.quick else args.repeats):
            stored["rows"].append(in_fresh_process(one, r, args.quick))
            meta["date"] = f"{first} … {run_meta()['date']}"  # the first repeat's start to this one's end
            row = stored["rows"][-1]
            print(f"{r + 1}: error {100 * row['error']:+.2f}% (floor {100 * row['noise_floor']:.2f}%), drift "
                  f"{100 * (row['drift'] or 0):+.2f}% ± {100 * (row['drift_se'] or 0):.2f}%, own interval "
                  f"{'holds' if row['own_holds'] else 'misses'}, with drift {'holds' if row['holds'] else 'misses'} "
                  f"({row['wall_s']:.0f} s)", flush=True)
            save_json(path, stored)
    print(f"RESULTS.md section written: {write_section('interval_coverage', render(stored))}")


if __name__ == "__main__":
    main()
