"""The paper table validated on a GPU from one prepared command (issue 35).

Prints the machine (``nvidia-smi``, driver, torch, CUDA, cuDNN), runs the ``gpu``-marked
tests, then validates the paper table's cases row by row within ``--budget-s``: DeepSpeech2
on LibriSpeech (SortaGrad), GNMT on the WMT sample (buckets) and BERT on WikiText-2
(``group_by_length``), in fp32 and bf16 autocast, at the ``small`` preset, then DS2 ``small``
again with ``torch.backends.cudnn.benchmark`` on (the rows keyed ``.../cudnn-benchmark``, the
workload setting applied in every profiling and full-run process: per-shape autotuning is the
cost a shape's first step pays), then the ``paper`` preset as far as the budget goes. Each row:
the measured subset run in full twice (their spread is the noise floor), the projection from
10 SeqPoints with its interval, first-10 beside it, the steady-state selection error, the
cold-step term's share and the profiling reduction in steps and in wall clock. The timer is
``cuda`` (CUDA events) on ``--device cuda`` and ``wall`` on ``--device cpu``.

Each row runs in a fresh child process, killed when the budget runs out, and is appended to
``OUT/bench_gpu.json`` as soon as it is done; a rerun skips the rows already there. A row
whose time (from the same case's other dtype, else the slowest row so far) would overrun
the budget is not started, and the JSON and ``OUT/RESULTS-rows.md`` name it.

The device command is ``benchmarks/gpu_check.sh`` (its header prepares the ``.whl`` folder of
pydantic's wheels it installs). To resume a cut-off run, carry the returned ``bench_gpu.json``
in a folder ``.git/info/exclude`` ignores (``.gpu-prev/``) and copy it to ``$OUT`` first.
CPU dry run (seconds per row; what ``tests/benchmarks/test_bench_gpu.py`` runs)::

    PYTHONPATH=src python benchmarks/bench_gpu.py --device cpu --quick --out /tmp/gpu-dry
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # imported by tests/benchmarks/test_bench_gpu.py

from _paper_cases import ALLOCATOR_ENV, CASES, SMALL_CASES, Case, Scale, run_config

ROOT = Path(__file__).resolve().parents[1]
#: The paper table's cases on the GPU (names of ``_paper_cases.CASES``).
CASE_NAMES = ("ds2-librispeech", "gnmt-wmt-bucket", "bert-wiki-grouped")
DTYPES = ("fp32", "bf16")
#: SeqPoints per row (the paper's k); 3 on --quick, whose schedules have ~8 iterations.
K, K_QUICK = 10, 3
#: --quick schedules: this many batches of each case's batch size, one epoch.
QUICK_BATCHES = 8
JSON_NAME, ROWS_NAME = "bench_gpu.json", "RESULTS-rows.md"
NVIDIA_QUERY = "name,memory.total,clocks.max.sm,clocks.max.mem,power.limit"
#: Cases measured again with ``cudnn_benchmark = true`` (after the ``small`` rows), and the key's suffix.
CUDNN_CASES, CUDNN_SUFFIX = ("ds2-librispeech",), "cudnn-benchmark"
CUDNN_NOTE = ("off in the default rows (torch's default); on in the rows keyed .../cudnn-benchmark "
              "(workload setting cudnn_benchmark = true, applied in every profiling and full-run process)")


def plan(names: tuple[str, ...], quick: bool) -> dict[str, tuple[Case, str, bool]]:
    """Row key (``case/dtype``, ``case/dtype/cudnn-benchmark``) → (case, dtype, cudnn_benchmark),
    in running order: ``tiny`` on --quick, else every ``small`` row, then the
    :data:`CUDNN_CASES` among ``names`` with ``cudnn_benchmark`` on (on --quick too), then the
    ``paper`` preset on the small rows' schedules."""
    tiny = {c.name: c for c in CASES}
    small = {c.name: c for c in SMALL_CASES}
    presets: list[dict[str, Case]] = [tiny] if quick else [small, {
        k: dataclasses.replace(c, name=k.replace("-small", "-paper"), title=c.title.replace("[small]", "[paper]"),
                               workload=c.workload.replace(":small", ":paper")) for k, c in small.items()}]
    rows: dict[str, tuple[Case, str, bool]] = {}
    for i, cases in enumerate(presets):
        for name in names:
            case = cases[name if quick else f"{name}-small"]
            rows.update({f"{case.name}/{dtype}": (case, dtype, False) for dtype in DTYPES})
        if i == 0:
            for name in (n for n in names if n in CUDNN_CASES):
                case = cases[name if quick else f"{name}-small"]
                rows.update({f"{case.name}/{dtype}/{CUDNN_SUFFIX}": (case, dtype, True) for dtype in DTYPES})
    return rows


def row_config(case: Case, dtype: str, device: str, quick: bool, work: Path, cudnn_benchmark: bool = False) -> Any:
    """The ``RunConfig`` of one row: the paper table's, at k = 10, on ``device`` in ``dtype``
    (with the workload setting ``cudnn_benchmark``), timed by CUDA events on a GPU (the wall
    clock on a CPU), with the first-N baseline only; its run folder and cache under ``work``."""
    from seqpoint.workflows import ValidationSection

    scale = dataclasses.replace(Scale.make(quick), k_measured=K_QUICK if quick else K, runs=2)
    cfg = run_config(case, scale, work / "runs", work / "cache.sqlite")
    profile = dataclasses.replace(cfg.profile, timer="cuda" if device == "cuda" else "wall", metrics=("time",))
    lengths, batching = cfg.lengths, cfg.batching
    if quick:  # ~8 iterations and 3 steps a point: seconds a row on a CPU
        profile = dataclasses.replace(profile, warmup=1, repeats=2)
        lengths = dataclasses.replace(lengths, max_samples=QUICK_BATCHES * int(case.params.get("batch_size", 8)))
        batching = dataclasses.replace(batching, epochs=1)
    extra = {"cudnn_benchmark": True} if cudnn_benchmark else {}
    workload = dataclasses.replace(cfg.workload, set={**cfg.workload.set, "dtype": dtype, "device": device, **extra})
    return dataclasses.replace(cfg, name=f"gpu-{case.name}-{dtype}{'-' + CUDNN_SUFFIX if cudnn_benchmark else ''}", lengths=lengths, batching=batching,
                               workload=workload, profile=profile,
                               validation=ValidationSection(runs=2, baselines=("first",)))


def measure(key: str, case: Case, dtype: str, device: str, quick: bool, cudnn_benchmark: bool = False) -> dict[str, Any]:
    """One row validated: the figures of the table, as plain data. Its run folder goes to a
    temporary folder: only a few files, two folders deep, come back from the device's $OUT."""
    from seqpoint.exceptions import SeqPointWarning
    from seqpoint.measurements import STEADY_TIME
    from seqpoint.measurements.metrics import COLD_TIME, FIRST_STEP_TIME
    from seqpoint.workflows import validate

    t0 = time.perf_counter()
    with (tempfile.TemporaryDirectory(prefix="bench-gpu-") as work,
          warnings.catch_warnings(action="ignore", category=SeqPointWarning)):
        cfg = row_config(case, dtype, device, quick, Path(work), cudnn_benchmark)
        res = validate(cfg, ks=(cfg.selection.n_points,), exact=False)
    truth, steady, first = res.truth, res.steady, res.baselines.get("first")
    # Wall-clock reduction: the measured run over the seconds its points' profiling steps
    # took (a cold first step, then the steady time for every other step of the point).
    per_point = sum(cfg.profile.point_steps())
    profiling_s = 0.0
    for m in res.measurements.measurements:
        step, cold = m.metrics.get(STEADY_TIME, float("nan")), m.metrics.get(FIRST_STEP_TIME, float("nan"))
        profiling_s += per_point * step if cold != cold else cold + (per_point - 1) * step
    cold_s = float(res.projection.totals.get(COLD_TIME, 0.0))
    return {
        "key": key, "case": case.name, "workload": case.workload, "title": case.title, "dtype": dtype,
        "cudnn_benchmark": cudnn_benchmark, "device": device, "timer": cfg.profile.timer, "n_iterations": len(res.schedule), "k": len(res.seqpoints),
        "n_signatures": int(res.schedule.unique_signatures()[0].shape[0]),
        "measured_s": truth.measured_s, "runs_s": list(truth.runs_s), "noise_floor": truth.noise_floor,
        "projected_s": truth.projected_s, "interval_s": list(truth.interval_s), "error": truth.error,
        "interval_holds": bool(truth.within), "first_error": None if first is None else first.error,
        "selection_error": None if steady is None else steady.selection_error,
        "in_sequence_overhead": None if steady is None else steady.in_sequence_overhead,
        "cold_share": cold_s / truth.projected_s, "reduction_steps": res.reduction,
        "profiling_s": profiling_s, "reduction_wall": truth.measured_s / profiling_s if profiling_s else None,
        "row_wall_s": time.perf_counter() - t0,
    }


def machine(device: str) -> dict[str, Any]:
    """The GPU (``nvidia-smi``, or a note without it) and the software, printed and returned."""
    from seqpoint.measurements import environment_manifest

    info: dict[str, Any] = {"nvidia_smi": None, "driver": None, "cudnn_benchmark": CUDNN_NOTE}
    try:
        smi = ["nvidia-smi", f"--query-gpu={NVIDIA_QUERY}", "--format=csv"]
        info["nvidia_smi"] = subprocess.run(smi, capture_output=True, text=True, timeout=30, check=True).stdout.strip()
        drv = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        info["driver"] = subprocess.run(drv, capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        info["nvidia_smi"] = f"skipped: nvidia-smi not available ({exc.__class__.__name__})"

    env = environment_manifest(device)
    info.update({k: env.get(k) for k in ("device", "torch", "cuda", "cudnn", "python", "seqpoint", "git_commit",
                                          "cpu_count", "created_utc")})
    print(info["nvidia_smi"])
    print(" | ".join(f"{k} {info[k]}" for k in ("device", "driver", "torch", "cuda", "cudnn")), flush=True)
    return info


def gpu_tests(timeout_s: float) -> dict[str, Any]:
    """``pytest -m gpu -q`` over the test files that hold ``gpu``-marked tests: the summary's counts."""
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                   if "pytest.mark.gpu" in p.read_text())
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", *files]
    try:
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return {"files": files, "rc": None, "summary": f"cut off after {timeout_s:.0f} s"}
    lines = done.stdout.strip().splitlines()
    summary = lines[-1] if lines else done.stderr.strip()[-300:]
    counts = {word.rstrip("s") if word == "errors" else word: int(n)
              for n, word in re.findall(r"(\d+) (passed|failed|skipped|deselected|errors?|xfailed)", summary)}
    print(f"gpu tests: {summary}", flush=True)
    return {"files": files, "rc": done.returncode, "summary": summary, **counts,
            "failures": [ln for ln in lines if ln.startswith(("FAILED", "ERROR"))]}


def load(out: Path, name: str = JSON_NAME) -> dict[str, Any]:
    """What an earlier call wrote to ``out / name``, else an empty record."""
    path = out / name
    return json.loads(path.read_text()) if path.exists() else {"rows": [], "not_run": {}}


def save(out: Path, record: dict[str, Any], name: str = JSON_NAME) -> None:
    """Write the record whole to ``out / name``, atomically (a kill mid-write keeps the last one)."""
    tmp = out / (name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1))
    os.replace(tmp, out / name)


def add_row(out: Path, row: dict[str, Any], key: str = "key", name: str = JSON_NAME) -> None:
    """Put ``row`` in the record at ``out / name`` (in place of an earlier one of its ``key``)."""
    record = load(out, name)
    record["rows"] = [r for r in record["rows"] if r[key] != row[key]] + [row]
    record["not_run"].pop(row[key], None)
    save(out, record, name)


def run_child(cmd: list[str], timeout_s: float, env: dict[str, str] | None = None) -> int | None:
    """Run ``cmd`` (with ``env``, else this environment and ALLOCATOR_ENV) in a process group of
    its own, killed whole (its workers and full runs too) after ``timeout_s``: its exit status,
    None when killed. A group, not a session: the device machine ends a command's processes
    with it, and a new session would outlive it."""
    child = subprocess.Popen(cmd, env=env or {**os.environ, **ALLOCATOR_ENV}, process_group=0)
    try:
        return child.wait(timeout=max(timeout_s, 1.0))
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        return None


def gpu_parser(doc: str, out: str, budget_s: float) -> argparse.ArgumentParser:
    """The GPU scripts' flags: ``--out`` (default $OUT, else ``benchmarks/results/<out>``),
    ``--budget-s``, ``--device`` and ``--quick`` (tiny presets and schedules: the CPU dry run)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "benchmarks/results" / out),
                    help=f"output folder (default $OUT, else benchmarks/results/{out})")
    ap.add_argument("--budget-s", type=float, default=budget_s, help="seconds for the rows together")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--quick", action="store_true", help="tiny presets and schedules (the CPU dry run)")
    return ap


def run_rows(out: Path, todo: dict[str, str], cmd: Callable[[str], list[str]], left: Callable[[], float],
             report: Callable[[dict[str, Any]], str], *, name: str = JSON_NAME, key: str = "key",
             group: str = "case", env: Callable[[str], dict[str, str] | None] = lambda _: None) -> dict[str, Any]:
    """Each row of ``todo`` (key → its ``group`` field) measured by ``cmd(key)`` in a child process
    within the ``left()`` seconds, into the record at ``out / name`` (returned): a row already there
    is skipped, one that would take longer (the slowest done row of its group, else of any) than
    is left is not started, and one not started, cut off or failed is named in ``not_run``."""
    record = load(out, name)
    for k, g in todo.items():
        done = {r[key]: r for r in record["rows"]}
        if k in done:
            print(f"{k}: already measured, skipped", flush=True)
            continue
        walls = [(r.get("row_wall_s", 0.0), r.get(group) == g) for r in done.values()]
        est = max([w for w, same in walls if same] or [w for w, _ in walls] or [0.0])
        if left() < est or left() <= 0:
            record["not_run"][k] = f"budget: {max(left(), 0):.0f} s left" + (f", the row takes ~{est:.0f} s" if est else "")
            save(out, record, name)
            continue
        rc = run_child(cmd(k), left(), env(k))
        record = load(out, name)
        row = next((r for r in record["rows"] if r[key] == k), None)
        if row is None:
            record["not_run"][k] = "cut off at the budget" if rc is None else f"failed (exit {rc}; see the log)"
            save(out, record, name)
        else:
            print(report(row), flush=True)
    return record


def render(record: dict[str, Any], command: str) -> str:
    """The RESULTS.md section's header lines and table rows."""
    m = record.get("machine", {})
    pct = lambda x: "—" if x is None else f"{100 * x:+.2f}%"  # noqa: E731
    tests = record.get("gpu_tests", {})
    ks = "/".join(sorted({str(r["k"]) for r in record["rows"]})) or str(K)
    lines = [f"Device {m.get('device')}, driver {m.get('driver')}, torch {m.get('torch')}, CUDA {m.get('cuda')}, "
             f"cuDNN {m.get('cudnn')}; seqpoint {m.get('git_commit')}; {m.get('created_utc')}.",
             f"Command: `{command}`. gpu-marked tests: {tests.get('summary', 'not run')}.",
             f"cudnn.benchmark on/off: {m.get('cudnn_benchmark', CUDNN_NOTE)}.", "",
             "| case | dtype | iterations (signatures) | measured (noise floor) | "
             f"SeqPoint k={ks} (interval holds) | first-{ks} | steady selection | cold share | reduction steps / wall |", "|---|---|---|---|---|---|---|---|---|"]
    for r in record["rows"]:
        wall = "—" if r["reduction_wall"] is None else f"{r['reduction_wall']:.1f}×"
        case = f"{r['case']} + cudnn.benchmark" if r.get("cudnn_benchmark") else r["case"]
        lines.append(f"| {case} | {r['dtype']} | {r['n_iterations']} ({r['n_signatures']}) | "
                     f"{r['measured_s']:.3f} s ({100 * r['noise_floor']:.2f}%) | {pct(r['error'])} "
                     f"({'yes' if r['interval_holds'] else 'no'}) | {pct(r['first_error'])} | "
                     f"{pct(r['selection_error'])} | {100 * r['cold_share']:.2f}% | "
                     f"{r['reduction_steps']:.1f}× / {wall} |")
    if record["not_run"]:
        lines += ["", "Not in the table: " + "; ".join(f"{k} ({why})" for k, why in record["not_run"].items()) + "."]
    return "\n".join(lines) + "\n"


def run_row(args: argparse.Namespace) -> None:
    """The child: measure one row and append it to the JSON."""
    case, dtype, cudnn = plan(CASE_NAMES, args.quick)[args.row]
    add_row(args.out, measure(args.row, case, dtype, args.device, args.quick, cudnn))


def main() -> None:
    ap = gpu_parser(__doc__, "gpu", 420.0)
    ap.add_argument("--cases", help=f"comma-separated subset of {','.join(CASE_NAMES)}")
    ap.add_argument("--row", help=argparse.SUPPRESS)  # the child process of one row
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.row:
        run_row(args)
        return
    names = tuple(n.strip() for n in args.cases.split(",")) if args.cases else CASE_NAMES
    if bad := [n for n in names if n not in CASE_NAMES]:
        raise SystemExit(f"--cases: unknown case(s) {', '.join(bad)}; valid: {', '.join(CASE_NAMES)}.")
    start = time.monotonic()
    left = lambda: args.budget_s - (time.monotonic() - start)  # noqa: E731
    record = load(args.out)
    record["machine"] = machine(args.device)
    if args.device == "cpu":
        record["gpu_tests"] = {"summary": "skipped: --device cpu"}
    elif "rc" not in record.get("gpu_tests", {}):
        record["gpu_tests"] = gpu_tests(timeout_s=max(30.0, min(180.0, left() / 3)))
    save(args.out, record)
    quick = ["--quick"] if args.quick else []
    record = run_rows(args.out, {k: case.name for k, (case, _, _) in plan(names, args.quick).items()},
                      lambda k: [sys.executable, __file__, "--row", k, "--out", str(args.out), "--device", args.device,
                                 *quick], left,
                      lambda r: f"{r['key']}: measured {r['measured_s']:.3f} s (floor {100 * r['noise_floor']:.2f}%), "
                                f"SeqPoint {100 * r['error']:+.2f}%, first-{r['k']} {100 * (r['first_error'] or 0):+.2f}%, "
                                f"{r['row_wall_s']:.0f} s")
    command = " ".join(["python3 benchmarks/bench_gpu.py", *sys.argv[1:]])
    (args.out / ROWS_NAME).write_text(render(record, command))
    print(f"wrote {args.out / JSON_NAME} and {args.out / ROWS_NAME} ({time.monotonic() - start:.0f} s)")


if __name__ == "__main__":
    main()
