"""The SeqPoint paper's results table on real length data (issue 7), and the goals beyond it.

For each case (DeepSpeech2 on LibriSpeech with SortaGrad; GNMT on the WMT en-de sample and
Multi30k with bucketing and a token budget; BERT on WikiText-2 with group_by_length and
packing): the projection error of exact totals (FLOPs, a roofline time per GPU) for k = 1..20,
SeqPoint against every baseline at equal budget; the error against measured full runs beside
their noise floor (``seqpoint.workflows.validate``), with each baseline's; projected against
measured speedups and operation-category breakdowns; the profiling reduction of the measured
runs and of paper-scale ones; how often the reported intervals hold the truth.

Results go to ``benchmarks/results/paper_table.json``, which the RESULTS.md section and the
figures under ``benchmarks/figures/`` are rendered from (``--quick``: ``paper_table_quick``).

Usage: ``.venv/bin/python benchmarks/paper_table.py [--quick] [--cases a,b] [--presets tiny,small]
[--processes P] [--render-only]``
"""

from __future__ import annotations

import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from _paper_cases import ALL_CASES, ALLOCATOR_ENV, PRESETS, Case, Scale, child_env, select_cases
from _paper_exact import Counter, exact_case, paper_scale
from _paper_measured import measured_case, measured_case_brief, speedups
from _paper_render import plots, render
from _results import RESULTS_DIR, bench_parser, load_stored, run_meta, save_json, write_section

#: Everything finished so far, rewritten after each case (deleted once the run completes).
PARTIAL_PATH = RESULTS_DIR / "paper_table.partial.json"
_log = partial(print, flush=True)


def run(cases: tuple[Case, ...], scale: Scale, previous: dict[str, Any] | None) -> dict[str, Any]:
    """Run every section for ``cases``; entries of other cases are kept from ``previous``."""
    t_start = time.perf_counter()
    keep = previous if previous and previous["meta"]["quick"] == scale.quick else None
    data: dict[str, Any] = {"cases": dict(keep["cases"]) if keep else {}}
    if keep:
        data["paper_scale"] = keep.get("paper_scale", [])
    section_s: dict[str, float] = {}

    t0 = time.perf_counter()
    counter = Counter()
    for case in cases:
        entry = exact_case(case, scale, counter)
        data["cases"][case.name] = {"exact": entry}
        sp = entry["curves"]["seqpoint"]["flops"]
        _log(f"[exact] {case.name}: {entry['n_iterations']} iterations, {entry['n_signatures']} shapes, "
             f"SeqPoint FLOPs error at k={entry['ks'][-1]}: {100 * sp[-1]:+.4f}% ({entry['seconds']:.0f} s)")
        save_json(PARTIAL_PATH, data)
    section_s["deterministic"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    data["paper_scale"] = paper_scale()
    for p in data["paper_scale"]:
        red = {s["max_error"]: s for s in p["selections"]}
        _log(f"[paper-scale] {p['title']}: {p['n_iterations']} iterations; 0.1% bound -> "
             f"k={red[0.001]['k']}, {red[0.001]['reduction']:.0f}x")
    section_s["paper-scale"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    sp_s = 0.0
    measured = [c for c in cases if not scale.quick or c.quick_measured]
    with tempfile.TemporaryDirectory(prefix="paper-table-") as tmp, child_env(ALLOCATOR_ENV):
        for case in measured:
            entry, res = measured_case(case, scale, Path(tmp), Path(tmp) / "cache.sqlite")
            data["cases"][case.name]["measured"] = entry
            _log(f"[measured] {case.name}: {entry['n_iterations']} iterations, error "
                 f"{100 * entry['error']:+.3f}% (noise floor {100 * entry['noise_floor']:.3f}%), "
                 f"steady-state {entry.get('steady', {}).get('selection_error', float('nan')) * 100:+.3f}%, "
                 f"re-profiled {[round(100 * e, 2) for e in entry['spread']['errors']]}% "
                 f"({entry['validate_s']:.0f} s + {entry['spread_s']:.0f} s)")
            if case.pairs:
                t1 = time.perf_counter()
                data["cases"][case.name]["speedups"] = speedups(case, scale, res)
                sp_s += time.perf_counter() - t1
            save_json(PARTIAL_PATH, data)
    section_s["measured"] = time.perf_counter() - t0 - sp_s
    section_s["speedups"] = sp_s

    if scale.default_allocator:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="paper-table-") as tmp:
            # The small rows' validations take 10-35 min each; the allocator comparison is
            # made on the tiny rows, whose millisecond steps it affects most.
            for case in (c for c in measured if c.workload.endswith(":tiny")):
                brief = measured_case_brief(case, scale, Path(tmp), Path(tmp) / "cache.sqlite")
                data["cases"][case.name]["measured_default"] = brief
                _log(f"[default allocator] {case.name}: error {100 * brief['error']:+.3f}% "
                     f"(noise floor {100 * brief['noise_floor']:.3f}%)")
                save_json(PARTIAL_PATH, data)
        section_s["default allocator"] = time.perf_counter() - t0

    # Which run measured which rows: the entries of cases not run here are kept.
    history = [r for r in (keep or {}).get("meta", {}).get("history", []) if set(r["cases_run"]) - set(c.name for c in cases)]
    meta = run_meta(minutes=False)
    history.append({**meta, "processes": scale.processes, "cases_run": [c.name for c in cases],
                    "wall_s": time.perf_counter() - t_start})
    data["meta"] = {
        "history": history, "date": meta["date"], "command": meta["command"], "quick": scale.quick,
        "ks": list(scale.ks), "seeds": scale.seeds, "runs": scale.runs, "k_measured": scale.k_measured,
        "processes": scale.processes,
        "cases_run": [c.name for c in cases], "wall_s": time.perf_counter() - t_start,
        "section_s": section_s, "count_point_s": counter.seconds, "signatures_counted": counter.counted,
        "timing_env": ALLOCATOR_ENV,
    }
    # Cases in table order, whichever ran.
    data["cases"] = {c.name: data["cases"][c.name] for c in ALL_CASES if c.name in data["cases"]}
    return data


def publish(data: dict[str, Any]) -> None:
    """Write the RESULTS.md section and the figures from ``data``."""
    for path in plots(data):
        _log(f"figure: {path}")
    _log(f"RESULTS.md section written: {write_section('paper_table', render(data))}")


def main() -> None:
    ap = bench_parser(__doc__, "smaller schedules, k in {1,2,3,5,10}, 3 measured cases, 1 pair each (a few minutes)")
    ap.add_argument("--cases", help=f"comma-separated subset of: {', '.join(c.name for c in ALL_CASES)}")
    ap.add_argument("--presets", default="tiny",
                    help=f"comma-separated workload presets of the rows: {','.join(PRESETS)} (default tiny; "
                         "the small rows' full runs take ~1-3 min each)")
    ap.add_argument("--processes", type=int, default=1,
                    help="worker processes that time each SeqPoint ([profile] processes; default 1: serial)")
    ap.add_argument("--render-only", action="store_true",
                    help="re-render RESULTS.md and the figures from results/paper_table.json "
                         "(with --quick: from results/paper_table_quick.json)")
    args = ap.parse_args()
    json_path, previous = load_stored("paper_table.json")
    if args.render_only:
        if previous is None:
            raise SystemExit(f"{json_path} does not exist; run without --render-only first.")
        publish(previous)
        return
    cases = select_cases(args.cases, args.presets)
    if args.processes < 1:
        raise SystemExit(f"--processes must be 1 or more, got {args.processes}")
    # Every run replaces the rows it measures and keeps the others (the table's history says which).
    data = run(cases, Scale.make(args.quick, args.processes), previous)
    save_json(json_path, data)
    PARTIAL_PATH.unlink(missing_ok=True)
    _log(f"wrote {json_path} ({data['meta']['wall_s'] / 60:.1f} min)")
    publish(data)


if __name__ == "__main__":
    main()
