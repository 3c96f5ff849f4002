"""Projected speedups, torch.compile and the BERT study's breakdown on a GPU: one prepared
command (issue 36). Rows, against full runs of the paper table's measured subset at the
``small`` preset (``tiny`` on ``--quick``; timer ``cuda``, ``wall`` on a CPU), in this order:

``pair/<case>/<change>`` (BERT, then GNMT): fp32 -> bf16 autocast, micro_batches 1 -> 2,
    hidden x2 (BERT: and ffn), by ``speedup(a, b, validate=True)``: both projected from
    the same SeqPoints and run in full in alternating rounds (A B B A). Projected speedup and
    interval, measured speedup, error, noise floor, whether the interval holds, and the
    projected steady-state-only ratio beside the whole-run one (full runs give totals only).
``breakdown/<case>/<dtype>`` (BERT fp32, bf16): projected category shares of the run
    (``breakdown_s.*`` of the totals) against measured ones. A full run is not profiled, so
    the measured shares are every signature of the subset profiled (``steady_truth``, read
    back from the row's cache) weighted by its count; the JSON says so.
``compile/<case>/<mode>`` (BERT, ``compile = true``, ``dynamic``: and ``compile_dynamic =
    true``; minutes a row on a GPU, so last): the projection with its one-off compile term
    (``compile_s``), without it, and the steady state alone, against the compiled full runs; frames compiled, recompilations and dynamo's
    compile seconds per process from torch's log (``TORCH_LOGS`` to a file; the last ``runs``
    processes are the full runs, the JSON says when the count does not fit), and each full
    run's steps over 3x its median. Inductor's caches are off or new for the row, so every
    process compiles as a first run does. On ``--quick`` the backend is ``eager``.

Each row runs in a child process group killed at the budget and is appended to
``OUT/bench_gpu_speedups.json``; a rerun skips the rows there, and a row whose time (the
slowest done row of its kind, else of any) would overrun the budget is not started: the JSON
and ``OUT/RESULTS-rows.md`` name it. The gpu-marked tests are ``bench_gpu.py``'s; the BERT
study's own shares go beside the table by hand (saying what differs: model, GPU, software).

The device command (``carry: [".whl"]``, ``timeout_s`` 600): ``benchmarks/gpu_check.sh``'s
installs, then ``python3 benchmarks/bench_gpu_speedups.py --budget-s 420 --out $OUT``. To
resume, carry the returned JSON as ``bench_gpu.py``'s docstring says.
``--rows pair/bert,compile`` runs only the rows whose key starts with one of the prefixes.
CPU dry run (one full run per row; what ``tests/benchmarks/test_bench_gpu_speedups.py`` runs)::

    PYTHONPATH=src python benchmarks/bench_gpu_speedups.py --device cpu --quick --out /tmp/speedups-dry
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _paper_cases import ALLOCATOR_ENV, CASES, SMALL_CASES, Case
from bench_gpu import add_row, gpu_parser, load, machine, row_config, run_rows, save

JSON_NAME, ROWS_NAME = "bench_gpu_speedups.json", "RESULTS-rows.md"
#: The pairs' changes (the hidden one is the preset's widths doubled, see :func:`change`).
CHANGES = {"bf16": "fp32 -> bf16 autocast", "micro_batches": "micro_batches 1 -> 2", "hidden": "hidden x2"}
BERT, GNMT = "bert-wiki-grouped", "gnmt-wmt-bucket"
COMPILE_MODES: dict[str, dict[str, Any]] = {"default": {"compile": True},
                                            "dynamic": {"compile": True, "compile_dynamic": True}}
#: Inductor's caches for the compile rows: each process compiles, as a first run does.
CACHE_ENV = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "0", "TORCHINDUCTOR_AUTOGRAD_CACHE": "0"}
CACHE_NOTE = ("inductor's FX-graph and AOT-autograd caches off, its cache folder (triton's kernels) new for "
              "the row: every process compiles its graphs")
#: A dynamo log line: level, date, time, process id (a ``[rank0]:`` prefix under torch.distributed).
_LOG_LINE = re.compile(r"^(?:\[rank\d+\]:)?[IWEVD]\d{4} [\d:.]+ (\d+) ")


def plan(quick: bool) -> dict[str, tuple[str, Case, str]]:
    """Row key → (kind, case, variant), in running order (the compile rows, minutes each, last),
    on the paper table's ``tiny`` cases on --quick, else its ``small`` ones."""
    cases = {c.name.removesuffix("-small"): c for c in (CASES if quick else SMALL_CASES)}
    bert, gnmt = cases[BERT], cases[GNMT]
    rows = [("pair", bert, ch) for ch in CHANGES] + [("breakdown", bert, dt) for dt in ("fp32", "bf16")]
    rows += [("pair", gnmt, ch) for ch in CHANGES] + [("compile", bert, mode) for mode in COMPILE_MODES]
    return {f"{kind}/{case.name}/{variant}": (kind, case, variant) for kind, case, variant in rows}


def change(case: Case, what: str) -> dict[str, Any]:
    """Workload overrides of configuration B: bf16, two micro-batches, or the widths doubled."""
    if what != "hidden":
        simple: dict[str, dict[str, Any]] = {"bf16": {"dtype": "bf16"}, "micro_batches": {"micro_batches": 2}}
        return simple[what]
    from seqpoint.workloads import workload_config

    cfg = workload_config(case.workload)
    return {f: 2 * getattr(cfg, f) for f in ("hidden", "ffn") if hasattr(cfg, f)}


def config(case: Case, device: str, quick: bool, work: Path, *, metrics: tuple[str, ...] = ("time",),
           steady_truth: bool = False, **workload: Any) -> Any:
    """``bench_gpu``'s row config (k = 10, or 3 on --quick; cuda timer on a GPU) in fp32, two
    full runs (rounds of a pair; one on --quick, whose rows check the path, not the noise
    floor), no baselines, with ``metrics`` and the workload settings ``workload``."""
    from seqpoint.workflows import ValidationSection

    cfg = row_config(case, "fp32", device, quick, work)
    return dataclasses.replace(
        cfg, profile=dataclasses.replace(cfg.profile, metrics=metrics),
        workload=dataclasses.replace(cfg.workload, set={**cfg.workload.set, **workload}),
        validation=ValidationSection(runs=1 if quick else 2, baselines=(), steady_truth=steady_truth))


def truth(res: Any) -> dict[str, Any]:
    """A validation's projection against its measured full runs."""
    from seqpoint.measurements.metrics import COLD_TIME, COMPILE_TIME, RUN_TIME, STEADY_TIME

    t, totals = res.truth, res.projection.totals
    steady = float(totals.get(STEADY_TIME, float("nan")))
    return {"n_iterations": len(res.schedule), "k": len(res.seqpoints),
            "n_signatures": int(res.schedule.unique_signatures()[0].shape[0]),
            "measured_s": t.measured_s, "runs_s": list(t.runs_s),
            "noise_floor": t.noise_floor if t.noise_floor == t.noise_floor else None,  # NaN with one run
            "projected_s": t.projected_s, "interval_s": list(t.interval_s), "error": t.error,
            "interval_holds": bool(t.within), "run_time_s": float(totals.get(RUN_TIME, float("nan"))),
            "steady_s": steady, "steady_error": (steady - t.measured_s) / t.measured_s,
            "cold_s": float(totals.get(COLD_TIME, 0.0)), "compile_s": float(totals.get(COMPILE_TIME, 0.0)),
            "compile_graphs": res.projection.compile_term.get("graphs", 0.0)}


def pair_row(case: Case, what: str, device: str, quick: bool, work: Path) -> dict[str, Any]:
    """A and B on the same SeqPoints, projected and run in full in alternating rounds."""
    from seqpoint.workflows import speedup

    a = config(case, device, quick, work)
    b = dataclasses.replace(a, workload=dataclasses.replace(a.workload, set={**a.workload.set,
                                                                             **change(case, what)}))
    res = speedup(a, b, validate=True)
    sp, m = res.speedup, res.measured
    assert m is not None  # validate=True
    return {"label": CHANGES[what], "change": change(case, what), "n_iterations": res.n_iterations,
            "k": len(res.seqpoints), "metric": sp.metric, "projected": sp.value, "interval": list(sp.interval),
            "steady_projected": sp.steady_value, "measured": m.value, "runs_a_s": list(m.runs_a_s),
            "runs_b_s": list(m.runs_b_s), "noise_floor": m.noise_floor, "error": m.error_of(sp.value),
            "interval_holds": m.held_by(sp.interval),
            "agrees_within_error": m.agrees_with(sp.value, sp.interval, sp.confidence),
            "error_a": sp.total_a * len(m.runs_a_s) / sum(m.runs_a_s) - 1,
            "error_b": sp.total_b * len(m.runs_b_s) / sum(m.runs_b_s) - 1,
            "steady_measured": None, "steady_measured_note": "the full runs give run totals only"}


def shares(totals: dict[str, float]) -> dict[str, float]:
    """Category → share of the categories' sum."""
    whole = sum(totals.values())
    return {k: v / whole for k, v in sorted(totals.items(), key=lambda kv: -kv[1])} if whole > 0 else {}


def breakdown_row(case: Case, dtype: str, device: str, quick: bool, work: Path) -> dict[str, Any]:
    """Projected category shares against every signature's profiled breakdown, count-weighted."""
    import numpy as np

    from seqpoint.cache import MeasurementCache
    from seqpoint.measurements.metrics import breakdown_of
    from seqpoint.workflows import validate

    cfg = config(case, device, quick, work, metrics=("time", "breakdown"), steady_truth=True, dtype=dtype)
    res = validate(cfg, ks=(cfg.selection.n_points,), exact=False)
    by_sig = {e.measurement.signature: e.measurement for e in MeasurementCache(cfg.profile.cache).list()}
    sigs, counts, _ = res.schedule.unique_signatures()
    found = [by_sig.get(tuple(int(v) for v in row)) for row in sigs]
    measured: dict[str, float] = {}
    for m, n in zip(found, counts.tolist(), strict=True):
        for cat, s in ({} if m is None else m.breakdown_s).items():
            measured[cat] = measured.get(cat, 0.0) + n * s
    projected, truth_shares = shares(breakdown_of(res.projection.totals)), shares(measured)
    big = [c for c, s in truth_shares.items() if s > 0.02]
    gaps = {c: projected.get(c, 0.0) - truth_shares[c] for c in big}
    return {**truth(res), "dtype": dtype, "projected_shares": projected, "measured_shares": truth_shares,
            "signatures_profiled": int(sum(m is not None for m in found)),
            "max_gap_pp": float(np.max(np.abs(list(gaps.values())))) * 100 if gaps else None,
            "measured_shares_note": "every signature of the subset profiled (steady truth), count-weighted: "
                                    "a full run is not profiled"}


def dynamo_log(path: Path) -> list[dict[str, Any]]:
    """Per process, in order of its first line: frames dynamo compiled, recompilations, and
    dynamo's compile seconds (``_compile.compile_inner`` of its exit-time metrics table)."""
    procs: dict[int, dict[str, Any]] = {}
    for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
        if (hit := _LOG_LINE.match(line)) is None:
            continue
        pid = int(hit.group(1))
        p = procs.setdefault(pid, {"pid": pid, "compiles": 0, "recompiles": 0, "compile_s": None})
        p["compiles"] += "torchdynamo start tracing" in line
        p["recompiles"] += "Recompiling function" in line
        if (cs := re.search(r"_compile\.compile_inner\s+([\d.]+)", line)) is not None:
            p["compile_s"] = float(cs.group(1))
    return list(procs.values())


def spikes(res: Any) -> list[dict[str, Any]]:
    """Each full run's steps over three times its median step (a compilation shows as one):
    how many, their seconds over the median, and the first few iterations (0-based)."""
    import numpy as np

    out = []
    for times in res.full.iteration_s:
        med = float(np.median(times))
        idx = np.flatnonzero(times > 3 * med)
        out.append({"steps": int(idx.size), "excess_s": float((times[idx] - med).sum()), "median_step_s": med,
                    "first": idx[:5].tolist()})
    return out


def quiet_torch_stderr() -> None:
    """Keep torch's log in its file only (TORCH_LOGS_OUT): drop its stderr handlers here."""
    import logging

    import torch  # noqa: F401  (sets the handlers up)

    for log in [logging.getLogger(n) for n in logging.root.manager.loggerDict if n.startswith("torch")]:
        for h in [h for h in log.handlers if type(h) is logging.StreamHandler]:
            log.removeHandler(h)


def compile_row(case: Case, mode: str, device: str, quick: bool, work: Path) -> dict[str, Any]:
    """One compile mode validated, its recompilations counted from torch's log."""
    from seqpoint.workflows import validate

    quiet_torch_stderr()
    backend = "eager" if quick else "inductor"
    cfg = config(case, device, quick, work, compile_backend=backend, **COMPILE_MODES[mode])
    res = validate(cfg, ks=(cfg.selection.n_points,), exact=False)
    log = dynamo_log(Path(os.environ["TORCH_LOGS_OUT"]))
    procs, mine = [p for p in log if p["pid"] != os.getpid()], [p for p in log if p["pid"] == os.getpid()]
    # With one worker process the SeqPoints are timed here, in this process; else in fresh workers;
    # then the in-sequence window's fresh process, then the full runs.
    runs, workers = cfg.validation.runs, cfg.profile.processes if cfg.profile.processes > 1 else 0
    window = int(res.measurements.window is not None)
    fits = len(procs) == workers + window + runs
    row = truth(res)
    return {**row, "mode": mode, "backend": backend, "unexplained_s": row["measured_s"] - row["run_time_s"],
            "caches": CACHE_NOTE, "profiling_process": mine[0] if mine else None, "processes": procs,
            "full_run_processes": procs[-runs:] if fits else None,
            "count_note": "the last processes of torch's log are the full runs" if fits else
            f"{len(procs)} other processes logged, {workers} worker(s) + {window} window + {runs} full runs expected: "
            "which are the full runs is not known",
            "spikes": spikes(res)}


KINDS: dict[str, Callable[..., dict[str, Any]]] = {"pair": pair_row, "breakdown": breakdown_row, "compile": compile_row}


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.2f}%"


def render(record: dict[str, Any], command: str) -> str:
    """The RESULTS.md section's header lines and table rows, one table per kind of row."""
    m, rows = record.get("machine", {}), record["rows"]
    yes = lambda x: "—" if x is None else ("yes" if x else "no")  # noqa: E731
    floor = lambda x: "—" if x is None else f"{100 * x:.2f}%"  # noqa: E731
    lines = [f"Device {m.get('device')}, driver {m.get('driver')}, torch {m.get('torch')}, CUDA {m.get('cuda')}; "
             f"seqpoint {m.get('git_commit')}; {m.get('created_utc')}.", f"Command: `{command}`.", "",
             "| case | pair | iterations (k) | projected (interval) | steady-only projected | measured (noise floor) "
             "| error | interval holds | A / B projection errors |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['case']} | {r['label']} | {r['n_iterations']} ({r['k']}) | {r['projected']:.4f}× "
              f"({r['interval'][0]:.4f}–{r['interval'][1]:.4f}) | "
              f"{'—' if r['steady_projected'] is None else format(r['steady_projected'], '.4f') + '×'} | "
              f"{r['measured']:.4f}× ({floor(r['noise_floor'])}) | {pct(r['error'])} | "
              f"{yes(r['interval_holds'])} | {pct(r['error_a'])} / {pct(r['error_b'])} |"
              for r in rows if r["kind"] == "pair"]
    eager = {r["case"]: r["measured_s"] for r in rows if r["kind"] == "breakdown" and r["dtype"] == "fp32"}
    lines += ["", "| case | compile | measured (noise floor) | projected with compile_s (interval holds) | "
              "without compile_s | steady state only | compile_s projected (graphs) / cold term | "
              "frames compiled / recompiles / dynamo s per full run | steps > 3× median / their excess per full run "
              "| eager / compiled (not alternated) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in (r for r in rows if r["kind"] == "compile"):
        full = r["full_run_processes"]
        counts = "—" if full is None else ", ".join(f"{p['compiles']} / {p['recompiles']} / {p['compile_s']} s"
                                                    for p in full)
        ex = ", ".join(f"{e['steps']} / {e['excess_s']:.2f} s" for e in r["spikes"])
        ratio = f"{eager[r['case']] / r['measured_s']:.3f}×" if r["case"] in eager else "—"
        lines.append(f"| {r['case']} | {r['mode']} ({r['backend']}) | {r['measured_s']:.3f} s "
                     f"({floor(r['noise_floor'])}) | {pct(r['error'])} ({yes(r['interval_holds'])}) | "
                     f"{pct((r['run_time_s'] - r['compile_s']) / r['measured_s'] - 1)} | {pct(r['steady_error'])} | "
                     f"{r['compile_s']:.3f} s ({r['compile_graphs']:.0f}) / {r['cold_s']:.3f} s | {counts} | {ex} | "
                     f"{ratio} |")
    lines += ["", "| case | dtype | run error (interval holds) | category: projected / measured share | "
              "largest gap (categories > 2%) |", "|---|---|---|---|---|"]
    for r in (r for r in rows if r["kind"] == "breakdown"):
        cats = ", ".join(f"{c} {100 * r['projected_shares'].get(c, 0.0):.1f}/{100 * s:.1f}%"
                         for c, s in r["measured_shares"].items() if s > 0.01)
        gap = "—" if r["max_gap_pp"] is None else f"{r['max_gap_pp']:.2f} pp"
        lines.append(f"| {r['case']} | {r['dtype']} | {pct(r['error'])} ({yes(r['interval_holds'])}) | "
                     f"{cats} | {gap} |")
    if record["not_run"]:
        lines += ["", "Not in the tables: " + "; ".join(f"{k} ({why})" for k, why in record["not_run"].items()) + "."]
    return "\n".join(lines) + "\n"


def run_row(args: argparse.Namespace) -> None:
    """The child: measure one row and append it to the JSON."""
    from seqpoint.exceptions import SeqPointWarning

    kind, case, variant = plan(args.quick)[args.row]
    t0 = time.perf_counter()
    with (tempfile.TemporaryDirectory(prefix="bench-speedups-") as work,
          warnings.catch_warnings(action="ignore", category=SeqPointWarning)):
        row = KINDS[kind](case, variant, args.device, args.quick, Path(work))
    row = {"key": args.row, "kind": kind, "case": case.name, "workload": case.workload, "device": args.device,
           "timer": "cuda" if args.device == "cuda" else "wall", **row, "row_wall_s": time.perf_counter() - t0}
    add_row(args.out, row, name=JSON_NAME)


def main() -> None:
    ap = gpu_parser(__doc__, "gpu-speedups", 420.0)
    ap.add_argument("--rows", help="comma-separated prefixes of the row keys to run (default: all)")
    ap.add_argument("--row", help=argparse.SUPPRESS)  # the child process of one row
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.row:
        run_row(args)
        return
    start = time.monotonic()
    rows = plan(args.quick)
    if args.rows:
        prefixes = tuple(p.strip() for p in args.rows.split(",") if p.strip())
        rows = {k: v for k, v in rows.items() if k.startswith(prefixes)}
        if not rows:
            raise SystemExit(f"--rows {args.rows!r} matches no row; rows: {', '.join(plan(args.quick))}.")
    record = load(args.out, JSON_NAME)
    record["machine"] = machine(args.device)
    save(args.out, record, JSON_NAME)
    log_dir = Path(tempfile.mkdtemp(prefix="bench-speedups-log-"))

    def env(key: str) -> dict[str, str] | None:
        """A compile row's processes log dynamo's compiles to one file (appended), with inductor's caches new."""
        if not key.startswith("compile/"):
            return None
        (row_dir := log_dir / key.replace("/", "_")).mkdir()
        return {**os.environ, **ALLOCATOR_ENV, **CACHE_ENV, "TORCH_LOGS": "recompiles,dynamo",
                "TORCH_LOGS_OUT": str(row_dir / "dynamo.log"), "TORCHINDUCTOR_CACHE_DIR": str(row_dir / "inductor")}

    quick = ["--quick"] if args.quick else []
    record = run_rows(
        args.out, {k: kind for k, (kind, _, _) in rows.items()},
        lambda k: [sys.executable, __file__, "--row", k, "--out", str(args.out), "--device", args.device, *quick],
        lambda: args.budget_s - (time.monotonic() - start),
        lambda r: f"{r['key']}: error {pct(r.get('error'))}, {r['row_wall_s']:.0f} s", name=JSON_NAME,
        group="kind", env=env)
    shutil.rmtree(log_dir, ignore_errors=True)
    command = " ".join(["python3 benchmarks/bench_gpu_speedups.py", *sys.argv[1:]])
    (args.out / ROWS_NAME).write_text(render(record, command))
    print(f"wrote {args.out / JSON_NAME} and {args.out / ROWS_NAME} ({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
