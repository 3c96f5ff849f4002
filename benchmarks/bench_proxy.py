"""Steady-state selection error at k = 10: the fixed cost proxy against the model proxy (issue 14, item 2).

For each measured case of the paper table (its validation subset: the same schedule,
workload and allocator settings that ``paper_table.py`` validates), every unique signature
is profiled in isolation (steady step time, median of the repeats) in one fresh process.
The truth is ``Σ over all iterations`` of those times; each proxy's SeqPoints project
``Σ weight_i × time(point_i)`` from the *same* times, so the only error left is the
selection's. Compared: the fixed proxy (``attention``: tokens + attention/(6·768)),
``model`` (roofline time of the model's exact FLOPs and bytes on this CPU, from the
probe), ``model`` on the H100 roofline, and ``model+pilot`` (the CPU model rescaled by 5
signatures' times, taken from the same measurements). The noise floor printed beside is
the median relative IQR of the per-signature step times: how well one point's time is
known.

Usage: ``.venv/bin/python benchmarks/bench_proxy.py [--quick] [--cases a,b] [--presets tiny]``
(``--quick``: 2 cases, the paper table's quick subsets, 1 + 3 steps per signature).
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np

from _paper_cases import ALLOCATOR_ENV, Case, select_cases, validation_subset
from _paper_measured import child_env, in_fresh_process
from _results import header, write_section
from seqpoint.exceptions import SeqPointWarning
from seqpoint.measurements import STEADY_TIME
from seqpoint.profiling import ProfileConfig, profile_points
from seqpoint.selection import PilotTable, weighted_projection
from seqpoint.workflows._sections import SelectionSection
from seqpoint.workflows._stages import (
    choose_points,
    make_workload,
    model_cost,
)

#: Proxies compared, in table order.
PROXIES = ("fixed (attention)", "model (cpu roofline)", "model (h100 roofline)", "model+pilot (cpu, 5 signatures)")
QUICK_CASES = "gnmt-wmt-tokens,bert-wiki-grouped"


def case_errors(case: Case, quick: bool) -> dict[str, Any]:
    """Selection error of every proxy on ``case``'s validation subset (run in a fresh process)."""
    cfg, schedule = validation_subset(case, quick)
    wl = make_workload(cfg.workload)
    sigs, _, inverse = schedule.unique_signatures()
    rows = [tuple(int(v) for v in r) for r in sigs.tolist()]
    config = ProfileConfig(metrics=("time",), warmup=1 if quick else 3, repeats=3 if quick else 10)
    t0 = time.perf_counter()
    ms = profile_points(wl, rows, config, progress=False)
    timing_s = time.perf_counter() - t0
    by_sig = {m.signature: m.metrics for m in ms.measurements}
    step = np.array([by_sig[r][STEADY_TIME] for r in rows])
    floor = float(np.median([by_sig[r][f"{STEADY_TIME}_iqr"] / by_sig[r][STEADY_TIME] for r in rows]))
    truth = float(step[inverse].sum())

    proxies: dict[str, Any] = {PROXIES[0]: None}  # None: the case's own (fixed) proxy
    for label, device in ((PROXIES[1], "cpu"), (PROXIES[2], "h100")):
        proxies[label] = model_cost(SelectionSection(cost="model", cost_device=device), schedule, wl)
    model = proxies[PROXIES[1]]
    # The pilot reuses the step times already measured for its 5 signatures, spread over
    # the range of the model cost.
    order = np.argsort(np.asarray(model(schedule))[np.unique(inverse, return_index=True)[1]])
    pick = [rows[int(order[int(i)])] for i in np.round(np.linspace(0, len(rows) - 1, 5))]
    proxies[PROXIES[3]] = PilotTable(costs={r: float(by_sig[r][STEADY_TIME]) for r in pick}, base=model)

    errors = {}
    for label, proxy in proxies.items():
        # The case's own [selection] (the paper table's SeqPoints with the fixed proxy).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeqPointWarning)
            _, points = choose_points(cfg.selection, schedule, cost=proxy)
        at_points = [by_sig[p.signature][STEADY_TIME] for p in points.points]
        errors[label] = (weighted_projection(at_points, None, [p.weight for p in points.points]) - truth) / truth
    return {"case": case.name, "workload": case.workload, "iterations": len(schedule),
            "signatures": len(rows), "floor": floor, "timing_s": timing_s, "errors": errors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"cases {QUICK_CASES}, quick subsets, short timing")
    ap.add_argument("--cases", help="comma-separated paper-table cases (default: every case of --presets)")
    ap.add_argument("--presets", default="tiny", help="workload presets of the cases (default tiny)")
    args = ap.parse_args()
    cases = select_cases(QUICK_CASES if args.quick and not args.cases else args.cases, args.presets)
    results = []
    for case in cases:
        with child_env(ALLOCATOR_ENV):  # as the paper table times them
            res = in_fresh_process(case_errors, case, args.quick)
        results.append(res)
        print(f"{res['case']}: {res['iterations']} iterations, {res['signatures']} signatures timed in "
              f"{res['timing_s']:.0f} s (noise floor {100 * res['floor']:.2f}%): "
              + ", ".join(f"{label} {100 * e:+.3f}%" for label, e in res["errors"].items()), flush=True)

    def met(label: str) -> int:
        return sum(abs(r["errors"][label]) <= 0.005 for r in results)

    lines = [header("Steady-state selection error at k = 10: fixed against model cost proxy"), "",
             "Each case's validation subset (as in the paper table); every unique signature timed in "
             "isolation in one fresh process, so truth and projection use the same step times and the "
             "error is the selection's alone. Noise floor: median relative IQR of a signature's step "
             "times.", "",
             "| case | iterations | signatures | noise floor | " + " | ".join(PROXIES) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(PROXIES)]
    lines += [f"| `{r['case']}` | {r['iterations']:,} | {r['signatures']:,} | {100 * r['floor']:.2f}% | "
              + " | ".join(f"{100 * r['errors'][label]:+.3f}%" for label in PROXIES) + " |" for r in results]
    lines += ["", "Within 0.5% (the issue's goal): "
              + ", ".join(f"{label} {met(label)} of {len(results)}" for label in PROXIES) + "."]
    write_section("bench_proxy", "\n".join(lines))


if __name__ == "__main__":
    main()
