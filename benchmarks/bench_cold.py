"""The demo's own whole run, projected against its measured full run (issue 14, items 4 and 8).

``seqpoint demo`` projects a 10-epoch DeepSpeech2 run (8,920 iterations) from 10
SeqPoints. This benchmark runs that schedule in full (``--runs`` fresh processes, their
spread is the noise floor, between the projections so that both cover the same stretch of
time) and projects it ``--repeats`` times, each from a fresh process with no cache, under
each calibration of the cold-step term: ``first_step`` (the points' cold first steps),
``window`` (a timed in-sequence window of the first ``--window`` iterations) and
``window+in-run`` (also the steady state scaled by the window's in-run ratio); with
``--processes P``, also from the SeqPoints timed by P worker processes. Each repeat also
runs the demo's own workflow in a fresh process (``seqpoint.workflows.run`` on its config,
an empty cache): the headline ``seqpoint demo`` prints. Results go to
``benchmarks/results/bench_cold*.json``.

Usage: ``.venv/bin/python benchmarks/bench_cold.py [--quick] [--repeats 5] [--runs 2]
[--window 200] [--processes 3] [--allocator keep|default] [--no-demo] [--render]``
(``--allocator default``, the default: glibc's own settings, as ``make demo`` runs on a
user's machine; ``keep``: glibc keeps freed memory, as the paper table runs).
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from _paper_cases import ALLOCATOR_ENV, child_env, in_fresh_process
from _results import (
    bench_parser,
    header,
    load_stored,
    measurements_from_dict,
    run_meta,
    save_json,
    table,
    write_section,
)
from seqpoint.exceptions import SeqPointWarning
from seqpoint.measurements import Measurements
from seqpoint.profiling import ProfileConfig, Profiler, profile_points
from seqpoint.projection import project
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints
from seqpoint.validation import FullRun, run_full_fresh
from seqpoint.workflows import (
    build_schedule,
    choose_points,
    demo_configs,
    interleave_plan,
)
from seqpoint.workloads import load_workload

#: Projections compared: (label, project() keywords).
METHODS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("first_step", {"cold": "first_step"}),
    ("window", {"cold": "window"}),
    ("window+in-run", {"cold": "window", "in_run_correction": True}),
)


def demo_config(quick: bool, out: str) -> Any:
    """The demo's whole-run config writing under ``out`` (a subset under --quick)."""
    whole, _ = demo_configs(out)
    if quick:
        whole = dataclasses.replace(
            whole, lengths=dataclasses.replace(whole.lengths, max_samples=600, seed=0),
            batching=dataclasses.replace(whole.batching, epochs=2))
    return whole


def profile_child(spec: str, overrides: dict[str, Any], points: SeqPoints, config: ProfileConfig,
                  window_sigs: list[tuple[int, ...]]) -> dict[str, Any]:
    """The SeqPoints measured (no cache) and the window timed, from a fresh process."""
    workload = load_workload(spec, overrides)
    t0 = time.perf_counter()
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        ms = profile_points(workload, points, config, progress=False)
    profile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    window = Profiler(workload).window(window_sigs, start=0, timer=config.timer)
    window_s = time.perf_counter() - t0
    return {"measurements": dataclasses.replace(ms, window=window).to_dict(), "profile_s": profile_s,
            "window_s": window_s}


def demo_child(quick: bool) -> dict[str, Any]:
    """What ``seqpoint demo`` projects for its whole run, from this fresh process: the
    demo's own workflow and config (every metric, the 3-process protocol), with an empty
    measurement cache of its own and no report files."""
    from seqpoint.workflows import run

    with tempfile.TemporaryDirectory(prefix="bench-cold-demo-") as tmp:
        whole = demo_config(quick, tmp)
        whole = dataclasses.replace(
            whole, profile=dataclasses.replace(whole.profile, cache=str(Path(tmp) / "cache.sqlite")),
            report=dataclasses.replace(whole.report, plots=False, html=False))
        t0 = time.perf_counter()
        with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
            p = run(whole).projection
        seconds = time.perf_counter() - t0
    return {"headline": {"projected_s": p.totals["run_time_s"], "interval_s": list(p.interval["run_time_s"]),
                         "steady_s": p.totals["time_s"], "cold_term": p.cold_term},
            "seconds": seconds}


def projections(schedule: IterationSchedule, points: SeqPoints, ms: Measurements) -> dict[str, Any]:
    """run_time_s, its cold term and interval under every calibration of METHODS."""
    out = {}
    for label, kw in METHODS:
        p = project(schedule, points, ms, **kw)
        metric = "run_time_s" if "run_time_s" in p.totals else "time_s"
        out[label] = {"projected_s": p.totals[metric], "interval_s": list(p.interval[metric]),
                      "steady_s": p.totals["time_s"], "cold_term": p.cold_term}
    return out


def summarise(repeats: list[dict[str, Any]], truth: float) -> dict[str, Any]:
    """Error against the full run and spread over repeats, per (protocol, method)."""
    out: dict[str, Any] = {}
    for key in repeats[0]["projections"]:
        for label in repeats[0]["projections"][key]:
            vals = np.array([r["projections"][key][label]["projected_s"] for r in repeats])
            inside = [bool(lo <= truth <= hi) for lo, hi in
                      (r["projections"][key][label]["interval_s"] for r in repeats)]
            out[f"{key}/{label}"] = {
                "projected_s": vals.tolist(), "errors": ((vals - truth) / truth).tolist(),
                "spread": float((vals.max() - vals.min()) / vals.mean()), "within_interval": inside,
            }
    return out


def render(out: dict[str, Any]) -> str:
    """The RESULTS.md section of a stored run: each way of projecting against the full runs."""
    full = out["full"]
    rows = []
    for key, s in out["summary"].items():
        timed, cold = key.split("/")
        timed, cold = ("`seqpoint demo`'s workflow", "first step") if timed == "demo" else (timed, cold)
        rows.append([timed, cold.replace("_", " "), ", ".join(f"{x:.1f}" for x in s["projected_s"]),
                     ", ".join(f"{100 * e:+.2f}%" for e in s["errors"]), f"{100 * s['spread']:.2f}%",
                     f"{sum(s['within_interval'])} of {len(s['within_interval'])}"])
    allocator = "glibc's default malloc settings" if out["allocator"] == "default" else "glibc keeping freed memory"
    return "\n".join([
        header(f"The demo's whole {out['n_iterations']:,}-iteration run: projections against full runs timed "
               "beside them (issue 14)", out).rstrip(), "",
        f"`seqpoint demo`'s whole run ({out['n_points']} SeqPoints) in full {len(full['totals_s'])} times, each in a fresh "
        f"process between the projections: **{full['total_s']:.1f} s** ({', '.join(f'{t:.1f}' for t in full['totals_s'])} s; "
        f"noise floor {100 * full['noise_floor']:.2f}%). Each projection is a fresh process with no "
        "cache: the SeqPoints timed serially or by worker processes, the cold-step term from the points' first "
        f"steps or a {out['window']}-step in-sequence window, and the demo's own workflow (`seqpoint.workflows."
        f"run` on its config, the headline `seqpoint demo` prints). Every process runs with {allocator}.", "",
        *table(["SeqPoints timed", "cold term from", "projected (s)", "errors", "spread", "interval holds the truth"],
               rows, 2)])


def main() -> None:
    ap = bench_parser(__doc__, "a 600-utterance, 2-epoch subset, 2 repeats", "rewrite the RESULTS.md section from the JSON")
    ap.add_argument("--repeats", type=int, default=5, help="fresh-process projections (default 5)")
    ap.add_argument("--runs", type=int, default=2, help="measured full runs (default 2: the noise floor)")
    ap.add_argument("--window", type=int, default=200, help="iterations of the in-sequence window")
    ap.add_argument("--processes", type=int, default=3,
                    help="also project from the multi-process protocol with P processes (0: skip)")
    ap.add_argument("--allocator", choices=("keep", "default"), default="default",
                    help="glibc's malloc settings of every timing process (default: glibc's own; keep: keep freed memory)")
    ap.add_argument("--no-demo", dest="demo", action="store_false",
                    help="skip the demo's own workflow in each repeat")
    args = ap.parse_args()
    name = "bench_cold" + ("_default_allocator" if args.allocator == "default" else "")
    path, stored = load_stored(f"{name}.json")
    if args.render:
        print(f"RESULTS.md section written: {write_section(name, render(stored))}")
        return
    env = ALLOCATOR_ENV if args.allocator == "keep" else {}
    repeats = 2 if args.quick else args.repeats
    window_n = min(args.window, 20) if args.quick else args.window
    whole = demo_config(args.quick, tempfile.mkdtemp(prefix="bench-cold-"))
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        schedule = build_schedule(whole.lengths, whole.batching)
        _, points = choose_points(whole.selection, schedule)
    spec, overrides = whole.workload.name, dict(whole.workload.set)
    sigs = [tuple(int(v) for v in row) for row in schedule.signature_matrix()[:window_n]]
    base = ProfileConfig(warmup=whole.profile.warmup, repeats=whole.profile.repeats, metrics=("time",))
    configs = {"serial": base}
    if args.processes > 1:
        configs[f"processes={args.processes}"] = dataclasses.replace(
            base, processes=args.processes, repeats=max(base.repeats, args.processes))
    print(f"demo schedule: {len(schedule)} iterations, {len(points.points)} SeqPoints, window {window_n}",
          flush=True)
    t_start = time.perf_counter()
    runs: list[dict[str, Any]] = []
    fulls: list[FullRun] = []
    # Full runs go between the projection repeats, as validate puts them between its workers: the truth
    # covers the same stretch of time as the projections (this machine's speed moves 5-8% in ten minutes).
    after = interleave_plan(args.runs, repeats + 1)
    order: list[dict[str, Any]] = []
    full_s = 0.0
    with child_env(env):
        for r in range(repeats):
            entry: dict[str, Any] = {"projections": {}, "seconds": {}}
            order.append({"projection": r, "started_s": time.perf_counter() - t_start})
            for key, cfg in configs.items():
                child = in_fresh_process(profile_child, spec, overrides, points, cfg, sigs)
                ms = measurements_from_dict(child["measurements"])
                entry["projections"][key] = projections(schedule, points, ms)
                entry["seconds"][key] = {"profile_s": child["profile_s"], "window_s": child["window_s"]}
                entry.setdefault("drift", {})[key] = ms.protocol.get("drift", [])
                shown = ", ".join(f"{lab} {v['projected_s']:.1f} s (cold {v['cold_term'].get('total_s', 0):.1f} s)"
                                  for lab, v in entry["projections"][key].items())
                print(f"[repeat {r + 1}/{repeats}] {key}: {shown}", flush=True)
            if args.demo:
                child = in_fresh_process(demo_child, args.quick)
                entry["projections"]["demo"] = {"headline": child["headline"]}
                entry["seconds"]["demo"] = {"run_s": child["seconds"]}
                h = child["headline"]
                print(f"[repeat {r + 1}/{repeats}] demo: headline {h['projected_s']:.1f} s "
                      f"(cold {h['cold_term'].get('total_s', 0):.1f} s, {child['seconds']:.0f} s to run)", flush=True)
            runs.append(entry)
            for _ in range(after.get(r, 0)):
                order.append({"full_run": len(fulls), "started_s": time.perf_counter() - t_start})
                t0 = time.perf_counter()
                fulls.append(run_full_fresh(spec, overrides, schedule, runs=1))
                full_s += time.perf_counter() - t0
                print(f"[full run {len(fulls)}/{args.runs}] {fulls[-1].total_s:.1f} s", flush=True)
    full = FullRun(iteration_s=np.vstack([f.iteration_s for f in fulls]),
                   wall_s=np.concatenate([f.wall_s for f in fulls]))
    out = {
        **run_meta(), "quick": args.quick, "allocator": args.allocator, "n_iterations": len(schedule),
        "n_points": len(points.points), "window": window_n,
        "full": full.to_dict(), "full_run_s": full_s, "order": order, "repeats": runs, "summary": summarise(runs, full.total_s),
        "wall_s": time.perf_counter() - t_start,
    }
    save_json(path, out)
    print(render(out), f"\nwrote {path}; RESULTS.md section written: {write_section(name, render(out))}")


if __name__ == "__main__":
    main()
