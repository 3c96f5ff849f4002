"""Projected against measured speedups, both timed in interleaved rounds (issue 14, item 5).

Every round times, for a pair a -> b of a paper-table case, in this order (b first in odd
rounds, so a linear drift of the machine's speed cancels): a's SeqPoints (the paper table's
harness: 3 worker processes) and an in-sequence window of the run's first ``--window``
iterations in one fresh process, a's full run in another, then the same for b.

The measured speedup is the ratio of the mean full runs; its noise floor is the spread of
a/b over every pairing of a's and b's runs, and its standard error the spread of the
per-round ratios over sqrt(rounds). The projected speedup is the ratio of the mean
projections, under each calibration of the whole-run time: ``steady`` (``time_s`` alone),
``first_step`` (plus the cold-step term from each point's first step), ``window`` (that term
from the window) and ``window+in-run`` (the steady state also scaled by the window's in-run
ratio). Each round keeps both configurations' SeqPoint measurements, so the projection can
be judged again offline; results go to ``benchmarks/results/speedups.json.gz``.

Usage: ``.venv/bin/python benchmarks/bench_speedups.py [--quick] [--rounds 3] [--window 100]
[--cases ds2-librispeech,bert-wiki-grouped] [--render-only]``
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from typing import Any

import numpy as np

from _paper_cases import (
    ALLOCATOR_ENV,
    CASES,
    Case,
    child_env,
    harness,
    in_fresh_process,
    validation_subset,
)
from _paper_measured import short
from _results import (
    bench_parser,
    header,
    load_json,
    load_stored,
    measurements_from_dict,
    run_meta,
    save_json,
    write_section,
)
from bench_cold import profile_child, projections
from seqpoint.exceptions import SeqPointWarning
from seqpoint.measurements import Measurements
from seqpoint.profiling import ProfileConfig
from seqpoint.projection import project_speedup
from seqpoint.validation import MeasuredSpeedup, run_full_fresh
from seqpoint.workflows import choose_points

PROCESSES = 3
#: The projections compared, in table order (``steady`` is ``time_s`` of the first).
LABELS = ("steady", "first_step", "window", "window+in-run")


def one_config(case: Case, overrides: dict[str, Any], schedule: Any, points: Any,
               sigs: list[tuple[int, ...]]) -> tuple[dict[str, Any], Measurements]:
    """One configuration's projections (fresh process) and full run (another fresh
    process), and its SeqPoints' measurements."""
    pc = ProfileConfig(**harness(PROCESSES), metrics=("time",))
    t0 = time.perf_counter()
    child = in_fresh_process(profile_child, case.workload, dict(overrides), points, pc, sigs)
    ms = measurements_from_dict(child["measurements"])
    bad = [m for m in ms.measurements if not m.ok]
    if bad:
        raise RuntimeError(f"{len(bad)} point(s) failed: {bad[0].message}")
    out = projected(schedule, points, ms)
    out["profile_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out["full_s"] = float(run_full_fresh(case.workload, dict(overrides), schedule, runs=1).total_s)
    out["full_wall_s"] = time.perf_counter() - t0
    return out, ms


def half_width(interval: Any, centre: float) -> float:
    """Half-width relative to ``centre`` (the upper side: the low end is cut at 0)."""
    return (interval[1] - centre) / centre


def projected(schedule: Any, points: Any, ms: Measurements) -> dict[str, Any]:
    """One configuration's whole-run projection under every calibration of LABELS, and the
    whole run's (first_step) interval."""
    proj = projections(schedule, points, ms)
    out: dict[str, Any] = {label: proj[label]["projected_s"] for label in LABELS[1:]}
    out["steady"] = proj["first_step"]["steady_s"]
    out["in_run_ratio"] = proj["window+in-run"]["cold_term"].get("in_run_ratio")
    out["interval"] = proj["first_step"]["interval_s"]
    return out


def projected_speedup(schedule: Any, points: Any, ms_a: Measurements, ms_b: Measurements) -> dict[str, Any]:
    """What ``seqpoint speedup`` reports from one round's two measurement sets: the
    whole-run speedup (first_step calibration: the window is left out) and its interval."""
    sp = project_speedup(schedule, points, dataclasses.replace(ms_a, window=None),
                         dataclasses.replace(ms_b, window=None))
    return {"value": sp.value, "interval": list(sp.interval), "metric": sp.metric}


def summarise(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Measured and projected speedups of a pair from its rounds."""
    m = MeasuredSpeedup.from_rounds([(r["a"]["full_s"], r["b"]["full_s"]) for r in rounds])
    measured, per_round = m.value, m.per_round
    out: dict[str, Any] = {
        "measured": measured, "measured_a_s": list(m.runs_a_s), "measured_b_s": list(m.runs_b_s),
        "noise_floor": m.noise_floor, "standard_error": m.standard_error, "projected": {},
    }
    for label in LABELS:
        pa = np.array([r["a"][label] for r in rounds])
        pb = np.array([r["b"][label] for r in rounds])
        value = float(pa.mean() / pb.mean())
        ratios = pa / pb
        # Each round's projected against measured ratio: their spread is the noise of both
        # sides, the error's standard error.
        paired = ratios / per_round - 1
        out["projected"][label] = {
            "value": value, "error": (value - measured) / measured, "per_round": ratios.tolist(),
            "spread": float((ratios.max() - ratios.min()) / ratios.mean()),
            "error_se": float(paired.std(ddof=1) / np.sqrt(len(rounds))) if len(rounds) > 1 else None,
        }
    # The interval `seqpoint speedup` prints (the default rule's), round by round, against the measured speedup.
    printed = [{**r["speedup"], "interval": r["speedup"].get("intervals", {}).get("processes", r["speedup"]["interval"])}
               for r in rounds if "speedup" in r]
    if printed:
        out["interval"] = {
            "held": sum(m.held_by(tuple(sp["interval"])) for sp in printed), "rounds": len(printed),
            # the verdict `speedup --validate` prints next: within the measured ratio's own error
            "agreed": sum(bool(m.agrees_with(sp["value"], tuple(sp["interval"]))) for sp in printed),
            "half_widths": [half_width(sp["interval"], sp["value"]) for sp in printed],
        }
    return out


def run_pair(case: Case, pair: Any, schedule: Any, points: Any, sigs: list[tuple[int, ...]],
             rounds: int) -> dict[str, Any]:
    over = {"a": dict(case.overrides), "b": {**case.overrides, **pair.change}}
    t0 = time.perf_counter()
    done: list[dict[str, dict[str, Any]]] = []
    for r in range(rounds):
        entry: dict[str, dict[str, Any]] = {}
        ms: dict[str, Measurements] = {}
        for c in ("a", "b") if r % 2 == 0 else ("b", "a"):
            entry[c], ms[c] = one_config(case, over[c], schedule, points, sigs)
            entry[c]["measurements"] = ms[c].to_dict()  # kept: the rounds can be judged again offline
        entry["speedup"] = projected_speedup(schedule, points, ms["a"], ms["b"])
        done.append(entry)
        print(f"    round {r + 1}: full {entry['a']['full_s']:.2f} / {entry['b']['full_s']:.2f} s, "
              f"first_step {entry['a']['first_step']:.2f} / {entry['b']['first_step']:.2f} s", flush=True)
    return {"label": pair.label, "change": pair.change, "rounds": done, **summarise(done),
            "seconds": time.perf_counter() - t0}


def run(cases: list[Case], rounds: int, window: int, quick: bool) -> dict[str, Any]:
    data: dict[str, Any] = {"cases": {}}
    t_start = time.perf_counter()
    with child_env(ALLOCATOR_ENV):
        for case in cases:
            cfg, schedule = validation_subset(case, quick)
            with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
                _, points = choose_points(cfg.selection, schedule)
            sigs = [tuple(int(v) for v in row) for row in schedule.signature_matrix()[:window]]
            print(f"{case.name}: {len(schedule)} iterations, {len(points.points)} SeqPoints, window {len(sigs)}",
                  flush=True)
            pairs = []
            for pair in case.pairs[: 1 if quick else None]:
                try:
                    pairs.append(run_pair(case, pair, schedule, points, sigs, rounds))
                    p = pairs[-1]
                    errs = ", ".join(f"{lab} {100 * v['error']:+.2f}%" for lab, v in p["projected"].items())
                    print(f"  {pair.label}: measured {p['measured']:.4f} (floor {100 * p['noise_floor']:.2f}%); "
                          f"{errs}", flush=True)
                except Exception as exc:  # a configuration this CPU cannot run is reported, not fatal
                    pairs.append({"label": pair.label, "change": pair.change, "error_message": short(exc)})
                    print(f"  {pair.label}: not run ({pairs[-1]['error_message']})", flush=True)
            data["cases"][case.name] = {"n_iterations": len(schedule), "n_points": len(points.points),
                                        "window": len(sigs), "pairs": pairs}
    data["meta"] = {**run_meta(), "quick": quick, "rounds": rounds, "window": window, "processes": PROCESSES,
                    "wall_s": time.perf_counter() - t_start}
    return data


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.2f}"


def render(data: dict[str, Any]) -> str:
    meta = data["meta"]
    lines = [header("Speedups: projected against measured, both timed in interleaved rounds (issue 14)", meta).rstrip(),
             f"- run: {meta['rounds']} rounds per pair, window {meta['window']} iterations, SeqPoints timed by "
             f"{meta['processes']} worker processes; wall time {meta['wall_s'] / 60:.1f} min",
             "- data: `benchmarks/results/speedups.json(.gz)`", "",
             "Each round times a's SeqPoints and window, a's full run, b's SeqPoints and window, b's full run, each "
             "in a fresh process (b first in odd rounds). Measured: ratio of the mean full runs; noise floor: spread "
             "of a/b over every pairing of a's and b's runs; s.e.: the per-round ratios' standard error. Projected: "
             "ratio of the mean projections; errors in %, ± the standard error of the rounds' own errors. "
             "*Interval holds*: rounds whose 95% interval, as `seqpoint speedup` prints it (whole run, first_step), "
             "holds the measured speedup.", "",
             "| case | a -> b | measured | noise floor % | s.e. % | " + " | ".join(LABELS) + " | interval holds |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    counts = {label: {"one": 0, "floor": 0, "biased": 0, "errors": []} for label in LABELS}
    held, agreed, rounds, half_widths, n = 0, 0, 0, [], 0
    for name, c in data["cases"].items():
        for p in c["pairs"]:
            if "error_message" in p:
                lines.append(f"| `{name}` | {p['label']} | not run: {p['error_message']} |" + " |" * 7)
                continue
            p = {**p, **summarise(p["rounds"])}  # the figures of this script's summarise
            n += 1
            cells = []
            for label in LABELS:
                e, se = p["projected"][label]["error"], p["projected"][label]["error_se"]
                k = counts[label]
                k["floor"] += abs(e) <= p["noise_floor"]
                k["one"] += abs(e) <= 0.01
                k["biased"] += se is not None and abs(e) > 2 * se
                k["errors"].append(abs(e))
                cells.append(_pct(e) + ("" if se is None else f" ± {100 * se:.2f}"))
            iv, se = p.get("interval"), p["standard_error"]
            if iv is not None:
                held, agreed, rounds = held + iv["held"], agreed + iv["agreed"], rounds + iv["rounds"]
                half_widths += iv["half_widths"]
            holds = "—" if iv is None else f"{iv['held']} of {iv['rounds']}"
            lines.append(f"| `{name}` | {p['label']} | {p['measured']:.4f} | {100 * p['noise_floor']:.2f} | "
                         f"{'—' if se is None else f'{100 * se:.2f}'} | " + " | ".join(cells) + f" | {holds} |")
    lines += ["", "| projection | within 1% | within the noise floor | more than 2 s.e. off | median abs. error % |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for label, k in counts.items():
        med = f"{100 * float(np.median(k['errors'])):.2f}" if k["errors"] else "—"
        lines.append(f"| {label} | {k['one']} of {n} | {k['floor']} of {n} | {k['biased']} of {n} | {med} |")
    runs = []  # each configuration round's whole-run interval against the mean of its full runs
    for c in data["cases"].values():
        for p in (p for p in c["pairs"] if "error_message" not in p):
            for tag in ("a", "b"):
                truth = float(np.mean([r[tag]["full_s"] for r in p["rounds"]]))
                for r in p["rounds"]:
                    lo, hi = r[tag].get("interval") or r[tag]["intervals"]["processes"]
                    runs.append((lo <= truth <= hi, half_width((lo, hi), r[tag]["first_step"])))
    if rounds:
        lines += ["", f"The 95% interval `seqpoint speedup` prints held the pair's measured speedup in {held} of "
                  f"{rounds} rounds; its median half-width was {100 * float(np.median(half_widths)):.2f}%. Counting "
                  f"the measured ratio's own 95% error (`MeasuredSpeedup.agrees_with`), the two agreed in {agreed} "
                  f"of {rounds}. Each configuration's whole-run interval (first_step) held the mean of its full runs "
                  f"in {sum(h for h, _ in runs)} of {len(runs)} rounds (median half-width "
                  f"{100 * float(np.median([w for _, w in runs])):.2f}%)."]
    return "\n".join([*lines, "", *render_configs(data)]) + "\n"


def config_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Each configuration's projections against its own full runs: a once per case (its
    rounds of every pair pooled), each b once."""
    rows = []
    for name, c in data["cases"].items():
        pairs = [p for p in c["pairs"] if "error_message" not in p]
        groups = [("a", [r["a"] for p in pairs for r in p["rounds"]])]
        groups += [(f"b: {p['label']}", [r["b"] for r in p["rounds"]]) for p in pairs]
        for label, rounds in groups:
            if not rounds:
                continue
            full = np.array([r["full_s"] for r in rounds])
            truth = float(full.mean())
            rows.append({
                "case": name, "config": label, "rounds": len(rounds), "measured_s": truth,
                "noise_floor": float((full.max() - full.min()) / truth),
                "errors": {lab: float(np.mean([r[lab] for r in rounds]) / truth - 1) for lab in LABELS},
                "in_run_ratio": [r["in_run_ratio"] for r in rounds],
            })
    return rows


def render_configs(data: dict[str, Any]) -> list[str]:
    """The table of :func:`config_rows` and its counts."""
    rows = config_rows(data)
    lines = ["Each configuration's whole-run time, projected (mean of its rounds) against its own full "
             "runs (their mean; noise floor: their spread). Configuration a pools its rounds of every pair.",
             "", "| case | configuration | rounds | measured s | noise floor % | in-run ratio (median) | "
             + " | ".join(LABELS) + " |", "| --- | --- | ---: | ---: | ---: | ---: |" + " ---: |" * len(LABELS)]
    for r in rows:
        ratios = [x for x in r["in_run_ratio"] if x is not None]
        ratio = f"{float(np.median(ratios)):.3f}" if ratios else "—"
        lines.append(f"| `{r['case']}` | {r['config']} | {r['rounds']} | {r['measured_s']:.2f} | "
                     f"{100 * r['noise_floor']:.2f} | {ratio} | "
                     + " | ".join(_pct(r["errors"][lab]) for lab in LABELS) + " |")
    lines += ["", "| projection | within the noise floor | within 2% | median abs. error % |", "| --- | ---: | ---: | ---: |"]
    for lab in LABELS:
        errs = np.array([abs(r["errors"][lab]) for r in rows])
        floors = np.array([r["noise_floor"] for r in rows])
        lines.append(f"| {lab} | {int((errs <= floors).sum())} of {len(rows)} | {int((errs <= 0.02).sum())} of "
                     f"{len(rows)} | {100 * float(np.median(errs)):.2f} |" if len(rows) else f"| {lab} | — | — | — |")
    return lines


def main() -> None:
    ap = bench_parser(__doc__, quick="the cases' quick subsets, one pair each, 2 rounds")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds per pair (default 3)")
    ap.add_argument("--window", type=int, default=100, help="iterations of the in-sequence window (default 100)")
    ap.add_argument("--cases", help="comma-separated subset of the cases with pairs")
    ap.add_argument("--render-only", action="store_true", help="rewrite the RESULTS.md section from the JSON")
    args = ap.parse_args()
    path, data = load_stored("speedups.json.gz")  # gzipped: every round's measurements make megabytes of JSON
    if not args.render_only:
        with_pairs = [c.name for c in CASES if c.pairs]
        names = args.cases.split(",") if args.cases else with_pairs
        if unknown := [n for n in names if n not in with_pairs]:
            sys.exit(f"--cases: {', '.join(unknown)} has no speedup pairs; choose from {', '.join(with_pairs)}")
        data = run([c for c in CASES if c.name in names], 2 if args.quick else args.rounds,
                   min(args.window, 20) if args.quick else args.window, args.quick)
        save_json(path, data)
        print(f"wrote {path}")
        data = load_json(path)  # rendered as --render-only renders it
    data = data or load_json(path.with_suffix(""))  # the stored run predates the kept measurements
    print(f"RESULTS.md section written: {write_section('speedups', render(data))}")


if __name__ == "__main__":
    main()
