"""A run projected onto a GPU it was not profiled on, checked on two GPUs (issue 37).

On a device machine: BERT (WikiText-2, ``group_by_length``) and GNMT (WMT sample, buckets)
at the ``small`` preset in bf16 autocast, timed by CUDA events with the operation-category
breakdown (``metrics = ["time", "breakdown"]``): the k = 10 SeqPoints profiled and the
validated subset run in full twice (``seqpoint.workflows.validate``; their spread is the
noise floor), within ``--budget-s``. Lengths, schedules and seeds are fixed, so both GPUs
profile the same SeqPoints. Each case runs in a child process killed at the budget. Under
``OUT/<device key>/`` (``h100``, ``h200``: the shipped device file that names the GPU,
``seqpoint.devices.gpu_named``) go ``bench_gpu_cross.json`` (every case, the
machine) and per case ``<case>/``: the run's ``schedule.csv``, ``seqpoints.json`` and
``measurements.json``, and ``result.json`` (measured full-run seconds, noise floor,
projected seconds with interval, the ``nvidia-smi`` facts). A rerun skips the cases there.

Here, once both folders came back, ``--compare DIR_A DIR_B`` (on the CPU) prints and writes
the RESULTS.md rows, per case: (a) the projected A → B whole-run speedup from the SeqPoints
profiled on both (ratio of the two projections) against the measured one (ratio of the
measured full runs); (b) B's run projected from A's measurements alone
(``seqpoint.projection.project_device``: each category's device-model time counted on a CPU
workload of the same config, on the two device files) against B's measured run, with its interval;
(c) the roofline alone (``roofline_<B>_s`` over the whole schedule, exact counts) against
B's measured run. ``--as h100,h200`` names the folders' devices: the dry run's are ``cpu``,
and a GPU that no device file's ``cuda_names`` holds gets its name as a folder
(``nvidia-h200-nvl``); its ``nvidia-smi`` facts say which variant it is.

The two device calls, one after the other with no idle wait (``carry: [".whl"]``,
``timeout_s`` 330 each): first ``kind: "nvidia-h100-x1"``, then ``kind: "nvidia-h200"`` (which
gives the H100 back and starts the H200 bare), each ``benchmarks/gpu_check.sh``'s installs (its
header prepares ``.whl``), then ``python3 benchmarks/bench_gpu_cross.py --budget-s 240 --out $OUT``.
Right after each call, copy its returned folder here (``cp -r FILES_AT/h100 .gpu-cross/``,
``.gpu-cross/`` in ``.git/info/exclude``); a second call would replace the files. Then::

    PYTHONPATH=src python benchmarks/bench_gpu_cross.py --compare .gpu-cross/h100 .gpu-cross/h200 \\
        --out .gpu-cross

A cut-off case resumes on the same warm machine with its folder carried as ``.gpu-prev/`` and
copied to ``$OUT`` first. ``--max-samples N`` shortens every case's measured schedule (give both GPUs the same N).

CPU dry run (tiny presets, 6 batches, k = 2, fp32, the wall timer; what
``tests/benchmarks/test_bench_gpu_cross.py`` runs, twice, then compares ``--as h100,h200``)::

    PYTHONPATH=src python benchmarks/bench_gpu_cross.py --device cpu --quick --out /tmp/cross-1
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from _paper_cases import CASES, SMALL_CASES, Case
from bench_gpu import add_row, gpu_parser, load, machine, row_config, run_rows, save

CASE_NAMES = ("bert-wiki-grouped", "gnmt-wmt-bucket")
#: The dtype on a GPU; the CPU dry run runs fp32 (bf16 autocast on a CPU is ~5x slower).
DTYPE, CPU_DTYPE = "bf16", "fp32"
#: --quick: batches of each case's batch size, and SeqPoints.
QUICK_BATCHES, K_QUICK = 6, 2
JSON_NAME, COMPARE_NAME, ROWS_NAME = "bench_gpu_cross.json", "cross_compare.json", "RESULTS-cross.md"
RUN_FILES = ("schedule.csv", "seqpoints.json", "measurements.json")
#: Issue 37's goals: (a) within 1% of the measured speedup, (b) within 5% of the measured run.
GOAL_A, GOAL_B = 0.01, 0.05


def cases(quick: bool) -> dict[str, Case]:
    """Case name → case: the ``tiny`` preset on --quick, else ``small``."""
    pool = {c.name: c for c in (CASES if quick else SMALL_CASES)}
    return {n: pool[n if quick else f"{n}-small"] for n in CASE_NAMES}


def case_config(case: Case, device: str, quick: bool, work: Path, max_samples: int | None) -> Any:
    """bench_gpu's row config of ``case`` in bf16 (fp32 on a CPU), with the category breakdown,
    two full runs and no baselines nor steady-state truth (device time goes to what is compared)."""
    from seqpoint.workflows import ValidationSection

    cfg = row_config(case, DTYPE if device == "cuda" else CPU_DTYPE, device, quick, work)
    lengths, selection = cfg.lengths, cfg.selection
    if quick:
        lengths = dataclasses.replace(lengths, max_samples=QUICK_BATCHES * int(case.params.get("batch_size", 8)))
        selection = dataclasses.replace(selection, n_points=K_QUICK)
    if max_samples:
        lengths = dataclasses.replace(lengths, max_samples=max_samples)
    return dataclasses.replace(cfg, name=f"cross-{case.name}", lengths=lengths, selection=selection,
                               profile=dataclasses.replace(cfg.profile, metrics=("time", "breakdown")),
                               validation=ValidationSection(runs=2, baselines=(), steady_truth=False))


def folder_key(environment: dict[str, Any]) -> str:
    """The device key of a measurement environment; a GPU no device file names keeps its name."""
    from seqpoint.devices import gpu_named

    if environment.get("device_type") != "cuda":
        return "cpu"
    name = str(environment.get("device", "gpu"))
    return gpu_named(name) or re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def smi_facts(text: str | None) -> dict[str, str]:
    """``nvidia-smi --format=csv``'s two lines as field → value (``note``: why there are none)."""
    lines = (text or "").splitlines()
    if len(lines) < 2:
        return {"note": text or "no nvidia-smi output"}
    return dict(zip([h.strip() for h in lines[0].split(",")], [v.strip() for v in lines[1].split(",")], strict=False))


def measure(name: str, case: Case, args: argparse.Namespace, gpu_dir: Path, info: dict[str, Any]) -> dict[str, Any]:
    """One case validated; its run files and ``result.json`` copied to ``gpu_dir / case.name``."""
    from seqpoint.exceptions import SeqPointWarning
    from seqpoint.workflows import validate

    t0 = time.perf_counter()
    dest = gpu_dir / case.name
    dest.mkdir(parents=True, exist_ok=True)
    with (tempfile.TemporaryDirectory(prefix="bench-cross-") as work,
          warnings.catch_warnings(action="ignore", category=SeqPointWarning)):
        cfg = case_config(case, args.device, args.quick, Path(work), args.max_samples)
        res = validate(cfg, ks=(cfg.selection.n_points,), exact=False)
        for f in RUN_FILES:
            shutil.copy2(res.folder.path / f, dest / f)
    truth = res.truth
    row = {"name": name, "case": case.name, "title": case.title, "workload": cfg.workload.name,
           "workload_set": dict(cfg.workload.set), "dtype": cfg.workload.set["dtype"], "device": args.device, "timer": cfg.profile.timer,
           "device_key": folder_key(res.measurements.environment), "gpu": smi_facts(info.get("nvidia_smi")),
           "max_samples": cfg.lengths.max_samples, "n_iterations": len(res.schedule), "k": len(res.seqpoints),
           "measured_s": truth.measured_s, "runs_s": list(truth.runs_s), "noise_floor": truth.noise_floor,
           "projected_s": truth.projected_s, "interval_s": list(truth.interval_s), "error": truth.error,
           "interval_holds": bool(truth.within), "case_wall_s": time.perf_counter() - t0}
    (dest / "result.json").write_text(json.dumps(row, indent=1))
    return row


def run_case(args: argparse.Namespace) -> None:
    """The child: measure one case and append it to the GPU folder's JSON."""
    record = load(args.out, JSON_NAME)
    row = measure(args.case, cases(args.quick)[args.case], args, args.out, record.get("machine", {}))
    add_row(args.out, row, "name", JSON_NAME)


def measure_all(args: argparse.Namespace) -> None:
    """Every case in a child process within the budget, into ``OUT/<device key>/``."""
    from seqpoint.measurements import environment_fingerprint

    start = time.monotonic()
    key = folder_key(environment_fingerprint(args.device))
    gpu_dir = args.out / key
    gpu_dir.mkdir(parents=True, exist_ok=True)
    record = load(gpu_dir, JSON_NAME)
    info = {k: v for k, v in machine(args.device).items() if k != "cudnn_benchmark"}  # bench_gpu's rows only
    record.update(machine=info, device_key=key)
    save(gpu_dir, record, JSON_NAME)
    more = [*(["--quick"] if args.quick else []), *(["--max-samples", str(args.max_samples)] if args.max_samples else [])]
    run_rows(gpu_dir, dict.fromkeys(args.cases, ""),
             lambda name: [sys.executable, __file__, "--case", name, "--out", str(gpu_dir), "--device", args.device, *more],
             lambda: args.budget_s - (time.monotonic() - start),
             lambda r: f"{r['name']} on {key}: measured {r['measured_s']:.3f} s (floor {100 * r['noise_floor']:.2f}%), "
                       f"projected {r['projected_s']:.3f} s ({100 * r['error']:+.2f}%), {r['case_wall_s']:.0f} s",
             name=JSON_NAME, key="name")
    print(f"wrote {gpu_dir} ({time.monotonic() - start:.0f} s)")


def compare_case(a: dict[str, Any], b: dict[str, Any], dir_a: Path, dir_b: Path, keys: tuple[str, str]) -> dict[str, Any]:
    """Rows (a), (b) and (c) of one case measured in both folders."""
    from seqpoint.devices import device_key
    from seqpoint.measurements import read_measurements
    from seqpoint.profiling import category_models, device_targets, exact_totals
    from seqpoint.projection import project_device
    from seqpoint.schedule import read_schedule
    from seqpoint.selection import read_seqpoints
    from seqpoint.workflows import signature_shapes
    from seqpoint.workloads import load_workload

    ka, kb = (device_key(k) for k in keys)
    run_a, run_b = dir_a / a["case"], dir_b / b["case"]
    schedule, seqpoints, meas = (read_schedule(run_a / "schedule.csv"), read_seqpoints(run_a / "seqpoints.json"),
                                 read_measurements(run_a / "measurements.json"))
    points_b = read_seqpoints(run_b / "seqpoints.json").points  # the same iterations; weights up to float noise
    same_points = [p.iteration for p in seqpoints.points] == [p.iteration for p in points_b] and all(
        math.isclose(p.weight, q.weight, rel_tol=1e-6) for p, q in zip(seqpoints.points, points_b, strict=True))
    same_schedule = (run_a / "schedule.csv").read_bytes() == (run_b / "schedule.csv").read_bytes()
    workload = load_workload(a["workload"], {**a["workload_set"], "device": "cpu"})  # counted on meta clones
    sigs = {m.signature for m in meas.measurements if m.ok}
    dev = project_device(schedule, seqpoints, meas,
                         category_models(workload, sigs, device_targets(workload, [ka, kb], model=True)),
                         profiled_on=ka, device=kb)
    exact = exact_totals(workload, schedule, shapes=signature_shapes(workload, schedule))
    roof_a, roof_b = exact.totals[f"roofline_{ka}_s"], exact.totals[f"roofline_{kb}_s"]
    measured = a["measured_s"] / b["measured_s"]
    projected = a["projected_s"] / b["projected_s"]
    (la, ha), (lb, hb) = a["interval_s"], b["interval_s"]
    lo, hi = dev.interval
    return {
        "case": a["case"], "title": a["title"], "from": ka, "to": kb, "same_schedule": same_schedule,
        "same_seqpoints": same_points, "measured_a_s": a["measured_s"], "measured_b_s": b["measured_s"],
        "noise_floor_a": a["noise_floor"], "noise_floor_b": b["noise_floor"],
        "a": {"measured_speedup": measured, "projected_speedup": projected, "error": projected / measured - 1,
              "meets_goal": abs(projected / measured - 1) <= GOAL_A, "interval": [la / hb, ha / lb if lb > 0 else float("inf")]},
        "b": {"projected_s": dev.total, "interval_s": [lo, hi], "error": dev.total / b["measured_s"] - 1,
              "meets_goal": abs(dev.total / b["measured_s"] - 1) <= GOAL_B,
              "interval_holds": bool(lo <= b["measured_s"] <= hi), "speedup": dev.speedup,
              "profiled_total_s": dev.profiled_total, "kept_share": dev.kept_share, "metric": dev.metric},
        "c": {"roofline_s": roof_b, "error": roof_b / b["measured_s"] - 1, "roofline_from_s": roof_a,
              "error_from": roof_a / a["measured_s"] - 1, "roofline_speedup": roof_a / roof_b,
              "method": exact.method},
    }


def render(result: dict[str, Any]) -> str:
    """The RESULTS.md rows of a comparison: both machines, then one row per case."""
    pct = lambda x: f"{100 * x:+.2f}%"  # noqa: E731
    lines = [f"{k}: {', '.join(f'{f} {v}' for f, v in m['gpu'].items())}; driver {m['driver']}, torch {m['torch']}, "
             f"CUDA {m['cuda']}, cuDNN {m['cudnn']}; {m['created_utc']}." for k, m in result["machines"].items()]
    lines += ["", "| case | measured A → B (noise floors) | (a) SeqPoints on both: speedup (error) | "
              "(b) B from A's profile [interval] (error) | (c) roofline only on B (error) |", "|---|---|---|---|---|"]
    for r in result["cases"]:
        a, b, c = r["a"], r["b"], r["c"]
        same = "" if r["same_seqpoints"] else " (SeqPoints differ)"
        lines.append(
            f"| {r['case']} {r['from']} → {r['to']}{same} | {r['measured_a_s']:.3f} s → {r['measured_b_s']:.3f} s = "
            f"{a['measured_speedup']:.3f}× ({100 * r['noise_floor_a']:.2f}% / {100 * r['noise_floor_b']:.2f}%) | "
            f"{a['projected_speedup']:.3f}× ({pct(a['error'])}) | {b['projected_s']:.3f} s "
            f"[{b['interval_s'][0]:.3f}, {b['interval_s'][1]:.3f}] ({pct(b['error'])}, holds: "
            f"{'yes' if b['interval_holds'] else 'no'}) | {c['roofline_s']:.4g} s ({pct(c['error'])}) |")
    if result["missing"]:
        lines += ["", "Not compared: " + "; ".join(result["missing"]) + "."]
    return "\n".join(lines) + "\n"


def compare(args: argparse.Namespace) -> dict[str, Any]:
    """``--compare DIR_A DIR_B``: every case measured in both, written to ``--out`` and printed."""
    dir_a, dir_b = (Path(d) for d in args.compare)
    rec_a, rec_b = load(dir_a, JSON_NAME), load(dir_b, JSON_NAME)
    keys = tuple(args.as_.split(",")) if args.as_ else (rec_a.get("device_key"), rec_b.get("device_key"))
    if len(keys) != 2 or not all(keys) or keys[0] == keys[1] or "cpu" in keys:
        raise SystemExit(f"--as: the folders' device keys are {keys[0]} and {keys[1] if len(keys) > 1 else None}; "
                         "name the two GPUs they stand for, comma-separated (--as h100,h200).")
    rows_b = {r["name"]: r for r in rec_b["rows"]}
    result: dict[str, Any] = {"machines": {}, "cases": [], "missing": []}
    for key, rec in zip(keys, (rec_a, rec_b), strict=True):
        m = rec.get("machine", {})
        result["machines"][key] = {**m, "gpu": smi_facts(m.get("nvidia_smi"))}
    for a in rec_a["rows"]:
        if a["name"] not in rows_b:
            result["missing"].append(f"{a['case']} (not measured in {dir_b})")
            continue
        result["cases"].append(compare_case(a, rows_b[a["name"]], dir_a, dir_b, (keys[0], keys[1])))
    result["missing"] += [f"{n} (not measured in {dir_a})" for n in rows_b if n not in {r["name"] for r in rec_a["rows"]}]
    result["missing"] += [f"{n} on {d} ({why})" for d, rec in ((dir_a, rec_a), (dir_b, rec_b))
                          for n, why in rec["not_run"].items()]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / COMPARE_NAME).write_text(json.dumps(result, indent=1))
    (args.out / ROWS_NAME).write_text(text := render(result))
    print(text, end="")
    print(f"wrote {args.out / COMPARE_NAME} and {args.out / ROWS_NAME}")
    return result


def main() -> None:
    ap = gpu_parser(__doc__, "gpu-cross", 240.0)
    ap.add_argument("--cases", help=f"comma-separated subset of {','.join(CASE_NAMES)}")
    ap.add_argument("--max-samples", type=int, help="samples of every case's measured schedule")
    ap.add_argument("--compare", nargs=2, metavar=("DIR_A", "DIR_B"), help="compare two GPU folders (here)")
    ap.add_argument("--as", dest="as_", metavar="KEY_A,KEY_B", help="the two folders' device keys (h100,h200)")
    ap.add_argument("--case", help=argparse.SUPPRESS)  # the child process of one case
    args = ap.parse_args()
    if args.compare:
        compare(args)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    if args.case:
        run_case(args)
        return
    if args.max_samples is not None and args.max_samples < 1:
        raise SystemExit(f"--max-samples must be an int >= 1. Got {args.max_samples}.")
    args.cases = tuple(n.strip() for n in args.cases.split(",")) if args.cases else CASE_NAMES
    if bad := [n for n in args.cases if n not in CASE_NAMES]:
        raise SystemExit(f"--cases: unknown case(s) {', '.join(bad)}; valid: {', '.join(CASE_NAMES)}.")
    measure_all(args)


if __name__ == "__main__":
    main()
