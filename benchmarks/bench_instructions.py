"""The paper table in instructions (issue 34, items 3-4): each case validated with
``[profile] timer = "instructions"``, its full run counted under callgrind, beside the same
validation with the wall clock.

A count does not drift nor depend on the machine's load, so the method's own error shows
where the clock's 2-7% noise floor hides it. Valgrind runs one thread at a time (no
"threads 1 -> 2" pair) on the AVX2 code path about 400x slower than native, so the measured
schedules are the paper table's ``--quick`` ones (17-100 iterations), one run per case (two
identical counted runs of ``bert:tiny`` differ by 0.0003%).

Run (the two halves on the two cores, the clock section afterwards on a quiet machine)::

    python benchmarks/bench_instructions.py --cases ds2-librispeech,gnmt-wmt-bucket --json A.json
    python benchmarks/bench_instructions.py --cases bert-wiki-packed,gnmt-m30k-bucket --json B.json
    python benchmarks/bench_instructions.py --timer wall --json C.json
    python benchmarks/bench_instructions.py --scale --cases bert-wiki-grouped,gnmt-m30k-bucket --json D.json
    python benchmarks/bench_instructions.py --render A.json B.json C.json D.json
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from _paper_cases import (
    ALLOCATOR_ENV,
    BASELINES,
    CASES,
    Scale,
    child_env,
    in_fresh_process,
    run_config,
)
from _results import bench_parser, header, write_section
from seqpoint.exceptions import SeqPointWarning
from seqpoint.measurements.metrics import derived_of, step_metric
from seqpoint.workflows import ProfileSection, ValidationSection, speedup, validate

K = 10
#: Speedup pairs counted on a BERT case (threads 1 -> 2 cannot be: valgrind runs one thread at a time).
PAIRS: dict[str, dict[str, Any]] = {"hidden 32 -> 64, ffn 64 -> 128": {"hidden": 64, "ffn": 128}, "micro_batches 1 -> 2": {"micro_batches": 2},
         "fp32 -> bf16 autocast": {"dtype": "bf16"}, "lamb -> adamw": {"optimizer": "adamw"}}
#: Samples of the measured schedule where the --quick size is too long to count here.
SAMPLES = {"bert-wiki-grouped": 200}
#: The --quick smoke run (``make bench-quick``): this case on this many samples (12 iterations).
QUICK_CASE, QUICK_SAMPLES = "bert-wiki-grouped", 48


def case_config(case: Any, timer: str, out: Path, cache: Path, samples: int | None = None) -> Any:
    """The paper table's --quick config of ``case`` at k = 10, under ``timer``: counted, one
    warm-up and one repeat (counts repeat within 0.2%) and one full run; timed, the paper
    table's harness and two full runs (their spread is the noise floor); ``samples`` of the
    measured schedule (default: the --quick size, or :data:`SAMPLES`)."""
    cfg = run_config(case, dataclasses.replace(Scale.make(True), k_measured=K), out, cache)
    counted = timer == "instructions"
    profile = (ProfileSection(timer=timer, warmup=1, repeats=1, drift_steps=1, metrics=("time",), cache=str(cache))
               if counted else dataclasses.replace(cfg.profile, metrics=("time",)))
    lengths = cfg.lengths
    if n := samples or SAMPLES.get(case.name):
        lengths = dataclasses.replace(lengths, max_samples=n)
    return dataclasses.replace(cfg, lengths=lengths, profile=profile,
                               validation=ValidationSection(runs=1 if counted else 2, baselines=BASELINES))


def measure(case: Any, timer: str, out: Path, cache: Path, samples: int | None = None) -> dict[str, Any]:
    """One case validated under ``timer`` (on ``samples``, as for :func:`case_config`): the figures of the table."""
    cfg = case_config(case, timer, out, cache, samples)
    t0 = time.perf_counter()
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        res = validate(cfg, ks=(K,), exact=False)
    wall = time.perf_counter() - t0
    step = step_metric(timer)
    cold_name = derived_of(step)[0]
    totals, truth, steady = res.projection.totals, res.truth, res.steady
    entry: dict[str, Any] = {
        "case": case.name, "timer": timer, "n_iterations": len(res.schedule), "k": len(res.seqpoints),
        "n_signatures": int(res.schedule.unique_signatures()[0].shape[0]),
        "measured": truth.measured_s, "runs": list(truth.runs_s), "noise_floor": truth.noise_floor,
        "projected": truth.projected_s, "interval": list(truth.interval_s), "error": truth.error,
        "within": truth.within, "drift": None if truth.drift is None else truth.drift.change,
        "baselines": {m: {"error": b.error, "selection_error": b.selection_error} for m, b in res.baselines.items()},
        "validate_wall_s": wall, "full_run_loop_s": res.full.wall_s.tolist(),
    }
    if steady is not None:
        cold = float(totals.get(cold_name, 0.0))
        cold_truth = truth.measured_s - steady.total_s  # the full run over every signature's steady step
        entry.update(steady_total=steady.total_s, selection_error=steady.selection_error,
                     in_sequence_overhead=steady.in_sequence_overhead, cold=cold, cold_share=cold / truth.projected_s,
                     cold_truth=cold_truth, cold_error_of_run=(cold - cold_truth) / truth.measured_s)
    if timer == "instructions":
        entry["count_reduction"] = count_reduction(res.truth.measured_s, res.measurements, cfg)
    return entry


def pair(case: Any, label: str, out: Path, cache: Path, samples: int | None = None,
         timer: str = "instructions") -> dict[str, Any]:
    """The projected speedup of ``PAIRS[label]`` on ``case`` against the two counted full runs."""
    a = case_config(case, timer, out, cache, samples)
    b = dataclasses.replace(a, workload=dataclasses.replace(a.workload, set={**a.workload.set, **PAIRS[label]}))
    t0 = time.perf_counter()
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        res = speedup(a, b, validate=True)
    sp, m = res.speedup, res.measured
    return {"case": case.name, "pair": label, "metric": sp.metric, "projected": sp.value,
            "interval": list(sp.interval), "measured": m.value, "error": m.error_of(sp.value),
            "held": m.held_by(sp.interval), "wall_s": time.perf_counter() - t0}


def count_reduction(total: float, measurements: Any, cfg: Any) -> float:
    """``total`` (the run's instructions) over every profiling step's, counted as the
    reduction factor counts steps (warm-up at its first-step count, repeats, each worker's
    start-up and drift checks at the check point's count): under callgrind, time follows the count."""
    steps = cfg.profile.point_steps()
    spent = 0.0
    for m in measurements.measurements:
        spent += m.metrics["instructions_first"] + (steps.warmup - 1 + steps.repeats) * m.metrics["instructions"]
    spent += cfg.profile.protocol_steps() * measurements.measurements[0].metrics["instructions"]
    return total / spent


def at_scale(case: Any, out: Path, cache: Path) -> dict[str, Any]:
    """The count reduction of ``case``'s full-size validation run (``run_config`` without
    --quick), too long to count in full here: its instructions are the projection's, from
    the k = 10 SeqPoints counted under callgrind (within 0.1% where a full run was counted)."""
    from seqpoint.workflows import run

    cfg = run_config(case, dataclasses.replace(Scale.make(False), k_measured=K), out, cache)
    counted = case_config(case, "instructions", out, cache)
    cfg = dataclasses.replace(cfg, profile=counted.profile)
    t0 = time.perf_counter()
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        res = run(cfg)
    total = res.projection.totals["run_instructions"]
    return {"case": case.name, "scale": "full-size validation run", "n_iterations": len(res.schedule),
            "k": len(res.seqpoints), "projected": total, "interval": list(res.projection.interval["run_instructions"]),
            "count_reduction": count_reduction(total, res.measurements, cfg), "step_reduction": res.reduction,
            "wall_s": time.perf_counter() - t0}


def render(entries: list[dict[str, Any]]) -> str:
    """The RESULTS.md table: each case's counted errors beside its clock errors."""
    pairs = [e for e in entries if "pair" in e]
    scaled = [e for e in entries if "scale" in e]
    by = {(e["case"], e["timer"]): e for e in entries if "pair" not in e and "scale" not in e}
    pct = lambda x: "n/a" if x is None else f"{100 * x:+.3f}%"  # noqa: E731
    lines = ["| case | iterations (signatures) | SeqPoint k=10 | first-N | best other baseline | steady selection | "
             "cold term: share / its error | in-sequence overhead | count reduction | clock error (floor) | "
             "clock in-sequence overhead |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for case in [c.name for c in CASES]:
        e, w = by.get((case, "instructions")), by.get((case, "wall"))
        if e is None:
            continue
        others = {m: b["error"] for m, b in e["baselines"].items() if m != "first"}
        best = min(others, key=lambda m: abs(others[m])) if others else None
        clock = "—" if w is None else f"{pct(w['error'])} ({100 * w['noise_floor']:.2f}%)"
        lines.append(" | ".join([
            f"| {case}", f"{e['n_iterations']} ({e['n_signatures']})", pct(e["error"]),
            pct(e["baselines"].get("first", {}).get("error")),
            "—" if best is None else f"{best} {pct(others[best])}", pct(e.get("selection_error")),
            f"{100 * e.get('cold_share', float('nan')):.2f}% / {pct(e.get('cold_error_of_run'))}",
            pct(e.get("in_sequence_overhead")), f"{e['count_reduction']:.2f}×",
            clock, "—" if w is None else pct(w.get("in_sequence_overhead"))]) + " |")
    if scaled:
        lines += ["", "| case, full-size validation run | iterations | projected instructions (interval) | "
                  "count reduction | step reduction |", "|---|---|---|---|---|"]
        lines += [f"| {e['case']} | {e['n_iterations']:,} | {e['projected'] / 1e9:.2f} G ({e['interval'][0] / 1e9:.2f} … "
                  f"{e['interval'][1] / 1e9:.2f}) | {e['count_reduction']:.1f}× | {e['step_reduction']:.1f}× |"
                  for e in scaled]
    if pairs:
        lines += ["", "| case | pair | projected | measured (counted full runs) | error | interval holds |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {e['case']} | {e['pair']} | {e['projected']:.4f}× | {e['measured']:.4f}× | {pct(e['error'])} | "
                  f"{'yes' if e['held'] else 'no'} |" for e in pairs]
    return "\n".join(lines)


def main() -> None:
    ap = bench_parser(__doc__, f"smoke run: {QUICK_CASE} on {QUICK_SAMPLES} samples, counted (minutes)")
    ap.add_argument("--cases", help="comma-separated case names (default: every tiny case)")
    ap.add_argument("--timer", default="instructions", choices=("instructions", "wall"))
    ap.add_argument("--pairs", help="comma-separated PAIRS labels' first words (hidden, micro_batches, fp32, "
                    "lamb) to count on the case of --cases instead of validating it")
    ap.add_argument("--scale", action="store_true", help="count only the SeqPoints of each case's full-size run "
                    "and report its count reduction (the run's count projected)")
    ap.add_argument("--samples", type=int, help="samples of each case's measured schedule (default: the paper "
                    "table's --quick size, or SAMPLES)")
    ap.add_argument("--json", type=Path, help="write the entries here (after every case)")
    ap.add_argument("--render", nargs="*", type=Path, help="print the table of these JSON files and stop")
    args = ap.parse_args()
    if args.render is not None:
        table = render([e for p in args.render for e in json.loads(p.read_text())])
        print(table)
        write_section("instructions", header("The paper table in instructions: the rows of the runs rendered")
                      + f"- runs rendered: {', '.join(map(str, args.render))}\n\n" + table)
        return
    names = [n.strip() for n in args.cases.split(",")] if args.cases else [c.name for c in CASES]
    if args.quick and not args.cases:
        names = [QUICK_CASE]
    samples = args.samples or (QUICK_SAMPLES if args.quick else None)
    known = {c.name: c for c in CASES}
    if bad := [n for n in names if n not in known]:
        raise SystemExit(f"Unknown case(s) {', '.join(bad)}; valid: {', '.join(known)}.")
    entries: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-instr-") as tmp:
        where = (Path(tmp) / "out", Path(tmp) / "cache.sqlite")
        if args.pairs:
            words = [w.strip() for w in args.pairs.split(",")]
            jobs = [(pair, known[names[0]], next(k for k in PAIRS if k.split()[0] == w), *where, samples) for w in words]
        else:
            jobs = [(at_scale, known[n], *where) if args.scale else (measure, known[n], args.timer, *where, samples)
                    for n in names]
        for fn, *rest in jobs:
            # Fresh, with ALLOCATOR_ENV, as the paper table validates (glibc's default churn: steps up to 2x slower).
            with child_env(ALLOCATOR_ENV):
                entries.append(in_fresh_process(fn, *rest))
            print(json.dumps(entries[-1]), flush=True)
            if args.json:
                args.json.write_text(json.dumps(entries, indent=1))
    if not args.json and not args.pairs:  # a run into --json files is written by --render, with the others
        write_section("instructions", header("The paper table in instructions: rows of this run") + "\n"
                      + render(entries))

if __name__ == "__main__":
    main()
