"""Steady-state selection error at k = 10 by cost proxy, the default ``auto`` among them (issue 14, item 2).

For each measured case of the paper table (its validation subset: the same schedule,
workload and allocator settings that ``paper_table.py`` validates), every unique signature
is profiled in isolation (steady step time, median of the repeats): by ``--processes``
fresh worker processes (default 3) that run the signatures round-robin, as a campaign runs
its SeqPoints, so that the machine's slow minutes hit every signature alike.
The truth is ``Σ over all iterations`` of those times; each proxy's SeqPoints project
``Σ weight_i × time(point_i)`` from the *same* times, so the only error left is the
selection's. Compared: the fixed proxy (``attention``: tokens + attention/(6·768)),
``model`` (roofline time of the model's exact FLOPs and bytes on this CPU, from the
probe), ``model`` on the H100 roofline, ``model+pilot`` (the CPU model rescaled by 5
signatures' times, taken from the same measurements) and the default ``auto`` (attention
grouping with the exact FLOPs and bytes as basis components: the default selection in
measured time, issue 34). The noise floor beside is the median relative IQR of the
per-signature step times. Each case is timed ``--runs`` times (each a fresh process): the
run-to-run spread of the selection error shows how much of it is timing noise.

The step times, iteration counts and model proxies of every signature are kept in
``results/bench_proxy.json.gz``; ``--replay`` selects again from them with the current code,
without timing (``auto``'s exact costs are counted: seconds a case).

Usage: ``.venv/bin/python benchmarks/bench_proxy.py [--quick] [--cases a,b] [--presets tiny]
[--runs 2] [--replay]`` (``--quick``: 2 cases, the paper table's quick subsets, 1 + 3 steps
per signature).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from _paper_cases import (
    ALLOCATOR_ENV,
    Case,
    child_env,
    in_fresh_process,
    select_cases,
    validation_subset,
)
from _results import bench_parser, header, load_stored, run_meta, save_json, write_section
from seqpoint.exceptions import SeqPointWarning
from seqpoint.measurements import STEADY_TIME
from seqpoint.profiling import ProfileConfig, profile_points
from seqpoint.selection import PilotTable, SignatureCosts, weighted_projection
from seqpoint.workflows import SelectionSection, choose_points, model_cost
from seqpoint.workloads import WorkloadRecipe

#: Proxies compared, in table order.
PROXIES = ("fixed (attention)", "model (cpu roofline)", "model (h100 roofline)", "model+pilot (cpu, 5 signatures)",
           "auto (default)")
QUICK_CASES = "gnmt-wmt-tokens,bert-wiki-grouped"


def measure_case(case: Case, quick: bool, processes: int) -> dict[str, Any]:
    """Every unique signature of ``case``'s validation subset timed in isolation, with its
    iteration count and model proxies (run in a fresh process)."""
    cfg, schedule = validation_subset(case, quick)
    wl = WorkloadRecipe.of(cfg.workload.name, cfg.workload.set).build()
    sigs, _, inverse = schedule.unique_signatures()
    rows = [tuple(int(v) for v in r) for r in sigs.tolist()]
    config = ProfileConfig(metrics=("time",), warmup=1 if quick else 3,
                           repeats=max(3 if quick else 10, processes), processes=processes)
    t0 = time.perf_counter()
    ms = profile_points(wl, rows, config, progress=False)
    timing_s = time.perf_counter() - t0
    by_sig = {m.signature: m.metrics for m in ms.measurements}
    models = {}
    for device in ("cpu", "h100"):
        proxy = model_cost(SelectionSection(proxy="model", proxy_device=device), schedule, wl)
        models[device] = [float(proxy.costs[r]) for r in rows]  # type: ignore[attr-defined]
    return {"case": case.name, "workload": case.workload, "iterations": len(schedule),
            "rows": rows, "counts": np.bincount(inverse.reshape(-1), minlength=len(rows)).tolist(),
            "step_s": [float(by_sig[r][STEADY_TIME]) for r in rows],
            "iqr_s": [float(by_sig[r][f"{STEADY_TIME}_iqr"]) for r in rows],
            "model_s": models, "timing_s": timing_s, "processes": processes}


def proxies_of(data: dict[str, Any]) -> dict[str, Any]:
    """The compared cost proxies, built from a measured case's stored values."""
    rows = [tuple(r) for r in data["rows"]]
    step = dict(zip(rows, data["step_s"], strict=True))
    models = {d: SignatureCosts(costs=dict(zip(rows, v, strict=True)), name=f"model(roofline {d})")
              for d, v in data["model_s"].items()}
    # The pilot reuses the step times already measured for its 5 signatures, spread over
    # the range of the model cost (as ``model_cost`` picks them).
    order = np.argsort(np.asarray(data["model_s"]["cpu"]), kind="stable")
    pick = [rows[int(order[int(i)])] for i in np.unique(np.round(np.linspace(0, len(rows) - 1, 5)))]
    return {PROXIES[0]: None,  # None: the case's own (fixed) proxy
            PROXIES[1]: models["cpu"], PROXIES[2]: models["h100"],
            PROXIES[3]: PilotTable(costs={r: step[r] for r in pick}, base=models["cpu"])}


def selection_errors(case: Case, data: dict[str, Any], quick: bool) -> dict[str, float]:
    """Each proxy's SeqPoints projected from the stored step times, against their sum over
    every iteration: the selection's own error."""
    cfg, schedule = validation_subset(case, quick)
    rows = [tuple(r) for r in data["rows"]]
    step = dict(zip(rows, data["step_s"], strict=True))
    truth = float(np.dot(data["counts"], data["step_s"]))
    errors = {}
    proxies = proxies_of(data)
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        proxies[PROXIES[4]] = model_cost(cfg.selection, schedule, WorkloadRecipe.of(cfg.workload.name, cfg.workload.set).build())
    for label, proxy in proxies.items():
        # The case's own [selection] (the paper table's SeqPoints, `attention` with no cost).
        with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
            _, points = choose_points(cfg.selection, schedule, cost=proxy)
        at_points = [step[tuple(p.signature)] for p in points.points]
        errors[label] = (weighted_projection(at_points, None, [p.weight for p in points.points]) - truth) / truth
    return errors


def floor_of(data: dict[str, Any]) -> float:
    """Median relative IQR of a signature's step times."""
    return float(np.median(np.asarray(data["iqr_s"]) / np.asarray(data["step_s"])))


def render(runs: list[list[dict[str, Any]]], meta: dict[str, Any], data: Path, presets: str) -> str:
    """The section: every run's selection errors per case and proxy; its date and command
    are the timing run's (``meta``), also when ``--replay`` renders it again."""
    last = runs[-1]
    processes = last[0].get("processes", 1)
    how = (f"by {processes} fresh worker processes running the signatures round-robin" if processes > 1
           else "one after another in one fresh process")
    title = f"Steady-state selection error at k = 10 by cost proxy ({presets} presets" + (
        ")" if processes > 1 else ", timed serially)")

    def met(label: str, run: list[dict[str, Any]]) -> int:
        return sum(abs(r["errors"][label]) <= 0.005 for r in run)

    def cell(case: str, label: str) -> str:
        return ", ".join(f"{100 * r['errors'][label]:+.3f}%" for run in runs for r in run if r["case"] == case)

    top = header(title, {**meta, "date": f"{meta['date']} {meta['when']}"} if meta else None).rstrip()
    errors = [abs(r["errors"][label]) for run in runs for r in run for label in PROXIES[::4]]
    lines = [top, "",
             "Each case's validation subset (as in the paper table); every unique signature timed in "
             f"isolation {how}, so truth and projection use the same step times and the error is the "
             f"selection's alone. {len(runs)} timing run(s), each its own fresh processes per case; a cell "
             "lists the runs' errors in order. Noise floor: median relative IQR of a signature's step "
             "times (last run). Step times and proxies are kept in "
             f"`results/{data.name}`; `--replay` selects again from them without timing.", "",
             "| case | iterations | signatures | noise floor | " + " | ".join(PROXIES) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(PROXIES)]
    lines += [f"| `{r['case']}` | {r['iterations']:,} | {len(r['rows']):,} | {100 * floor_of(r):.2f}% | "
              + " | ".join(cell(r["case"], label) for label in PROXIES) + " |" for r in last]
    lines += ["", "Within 0.5% (the issue's goal), per run: "
              + "; ".join(f"{label} " + ", ".join(f"{met(label, run)} of {len(run)}" for run in runs)
                          for label in PROXIES) + ".",
              "", f"The default against the old one (`auto` against `attention`), over the {len(errors) // 2} case × "
              f"run: mean |error| {100 * np.mean(errors[1::2]):.3f}% against {100 * np.mean(errors[::2]):.3f}%, "
              f"worst {100 * max(errors[1::2]):.3f}% against {100 * max(errors[::2]):.3f}%."]
    return "\n".join(lines)


def main() -> None:
    ap = bench_parser(__doc__, quick=f"cases {QUICK_CASES}, quick subsets, short timing")
    ap.add_argument("--cases", help="comma-separated paper-table cases (default: every case of --presets)")
    ap.add_argument("--presets", default="tiny", help="workload presets of the cases (default tiny)")
    ap.add_argument("--runs", type=int, default=2, help="timing runs per case, each in a fresh process (default 2)")
    ap.add_argument("--processes", type=int, default=3,
                    help="worker processes timing the signatures round-robin (default 3; 1: one after another)")
    ap.add_argument("--replay", action="store_true",
                    help="no timing: select again from the stored step times with the current code")
    args = ap.parse_args()
    cases = {c.name: c for c in select_cases(QUICK_CASES if args.quick and not args.cases else args.cases,
                                             args.presets)}
    # one data file and section per preset and protocol: the `small` rows do not replace the
    # `tiny` ones, nor a serial run the round-robin one
    topic = ("bench_proxy" + ("" if args.presets == "tiny" else f"_{args.presets}")
             + ("_serial" if args.processes == 1 else ""))
    path, stored = load_stored(f"{topic}.json.gz")
    if args.replay:
        runs = [[r for r in run if r["case"] in cases] for run in stored["runs"]]
        meta = stored.get("meta", {})
    else:
        start = time.gmtime()
        runs = []
        for _ in range(args.runs):
            run = []
            for case in cases.values():
                with child_env(ALLOCATOR_ENV):  # as the paper table times them
                    run.append(in_fresh_process(measure_case, case, args.quick, args.processes))
                print(f"{case.name}: {len(run[-1]['rows'])} signatures timed in {run[-1]['timing_s']:.0f} s",
                      flush=True)
            runs.append(run)
        meta = {**run_meta(), "date": time.strftime("%Y-%m-%d", start),
                "when": f"{time.strftime('%H:%M', start)}–{time.strftime('%H:%M', time.gmtime())} UTC"}
        save_json(path, {"meta": meta, "runs": runs})
    for run in runs:
        for r in run:
            r["errors"] = selection_errors(cases[r["case"]], r, args.quick)
            print(f"{r['case']} (noise floor {100 * floor_of(r):.2f}%): "
                  + ", ".join(f"{label} {100 * e:+.3f}%" for label, e in r["errors"].items()), flush=True)
    write_section(topic, render(runs, meta, path, args.presets))


if __name__ == "__main__":
    main()
