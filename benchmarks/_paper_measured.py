"""Sections that time real training steps: projection against measured full runs (with
their noise floor), projected against measured speedups, and the operation breakdown.

``seqpoint.workflows.validate`` does the measured-time validation of a case: it profiles
the SeqPoints and every baseline's points at the same budget, runs the whole schedule
``runs`` times in fresh processes (their spread is the noise floor) and compares.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from _paper_cases import Case, Scale, harness, run_config
from seqpoint.cache import MeasurementCache
from seqpoint.exceptions import SeqPointWarning
from seqpoint.measurements import Measurement
from seqpoint.profiling import ProfileConfig, profile_points
from seqpoint.projection import project
from seqpoint.workflows import validate
from seqpoint.workloads import load_workload


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:240]


@contextlib.contextmanager
def child_env(env: dict[str, str]) -> Iterator[None]:
    """Processes started inside see ``env`` (glibc reads ``MALLOC_*`` at start-up)."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _validate_child(case: Case, scale: Scale, out: Path, cache: Path,
                    with_breakdown: bool = True) -> tuple[dict[str, Any], Any]:
    cfg = run_config(case, scale, out, cache)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeqPointWarning)
        res = validate(cfg, progress=False, ks=scale.ks, exact=False)
    entry = res.to_dict()
    entry["validate_s"] = time.perf_counter() - t0
    entry["title"] = case.title
    entry["n_signatures"] = int(res.schedule.unique_signatures()[0].shape[0])
    entry["samples"] = cfg.lengths.max_samples
    entry["epochs"] = cfg.batching.epochs
    # Every step the harness ran for the SeqPoints (warm-up, repeats, the profiled breakdown step).
    entry["executed_steps"] = round(len(res.schedule) / res.reduction)
    if with_breakdown:
        t1 = time.perf_counter()
        entry["breakdown"] = breakdown(case, cfg, res)
        entry["breakdown_s"] = time.perf_counter() - t1
    return entry, res


def measured_case(case: Case, scale: Scale, out: Path, cache: Path) -> tuple[dict[str, Any], Any]:
    """Validate ``case`` against measured full runs; returns (JSON entry, ValidationResult).

    ``validate`` runs in a fresh process, as ``seqpoint validate`` would: profiled in this
    long-lived process (after counting, earlier cases and their profiler runs), the same
    SeqPoints were seen to project up to ~15% more time than in a fresh one.
    """
    entry, res = in_fresh_process(_validate_child, case, scale, out, cache)
    t1 = time.perf_counter()
    entry["spread"] = projection_spread(case, res, scale.spread_processes, scale.processes)
    entry["spread_s"] = time.perf_counter() - t1
    return entry, res


#: What the default-allocator comparison keeps of a validation.
_BRIEF = ("n_iterations", "n_points", "measured_s", "measured_runs_s", "runs_interleaved", "noise_floor",
          "projected_s", "interval_s", "error", "within_interval", "steady", "validate_s")


def measured_case_brief(case: Case, scale: Scale, out: Path, cache: Path) -> dict[str, Any]:
    """``validate`` alone (no breakdown, no re-profiling), in a fresh process."""
    entry, _ = in_fresh_process(_validate_child, case, scale, out, cache, False)
    return {k: entry[k] for k in _BRIEF if k in entry}


def breakdown(case: Case, cfg: Any, res: Any) -> dict[str, Any]:
    """Projected category seconds of the run next to the count-weighted measured ones.

    The measured side profiles every unique signature of the validated schedule once
    (the same harness configuration as ``validate``'s, so its cache has most of them)
    and weights each by how many iterations have it: the full run's breakdown without
    profiling each of its iterations.
    """
    projected = {k.split(".", 1)[1]: float(v) for k, v in res.projection.totals.items()
                 if k.startswith("breakdown_s.")}
    sig, counts, _ = res.schedule.unique_signatures()
    workload = load_workload(case.workload, overrides=dict(case.overrides))
    sec = cfg.profile
    ms = profile_points(workload, [tuple(int(v) for v in row) for row in sig], sec.harness,
                        cache=MeasurementCache(sec.cache), progress=False)
    measured: dict[str, float] = {}
    for m, c in zip(ms.measurements, counts.tolist(), strict=True):
        for cat, s in m.breakdown_s.items():
            measured[cat] = measured.get(cat, 0.0) + c * s
    return {"projected_s": projected, "measured_s": measured, "n_signatures": int(sig.shape[0]),
            "failed": sum(not m.ok for m in ms.measurements)}


def profile_child(spec: str, overrides: dict[str, Any], points: Any, processes: int = 1) -> list[dict[str, Any]]:
    """The SeqPoints timed (no cache) by the paper table's harness, in this process or ``processes`` workers."""
    pc = ProfileConfig(**harness(processes), metrics=("time",))
    with warnings.catch_warnings():  # as in _validate_child: the spread is the row's own figure
        warnings.simplefilter("ignore", SeqPointWarning)
        ms = profile_points(load_workload(spec, overrides=overrides), points, pc, progress=False)
    return [m.to_dict() for m in ms.measurements]


def in_fresh_process(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a new (spawned) Python process; its result comes back pickled."""
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(fn, *args).result()


def projection_spread(case: Case, res: Any, processes: int, workers: int = 1) -> dict[str, Any]:
    """The SeqPoints profiled again in ``processes`` fresh processes: how far apart are
    the projected run times? (With glibc's default allocator settings a process was seen
    to run every GNMT step 10-20% slower or faster than the next one, which two agreeing
    full runs do not reveal.) Each profiles with ``workers`` worker processes of its own."""
    totals = []
    for _ in range(processes):
        rows = in_fresh_process(profile_child, case.workload, dict(case.overrides), res.seqpoints, workers)
        proj = project(res.schedule, res.seqpoints, [Measurement.from_dict(r) for r in rows])
        totals.append(float(proj.totals.get("run_time_s", proj.totals["time_s"])))
    t = np.array(totals)
    truth = res.full.total_s
    return {"projected_s": totals, "spread": float((t.max() - t.min()) / t.mean()),
            "errors": [(x - truth) / truth for x in totals]}


_COMPILE_PROBE = """
import json, sys, time
from seqpoint.workloads import load_workload
out = {}
for label in sys.argv[1:]:
    w = load_workload("bert:tiny", overrides={"threads": 1, "compile": label != "eager"})
    firsts, steady = [], []
    for sig in ((8, 200, 0), (8, 150, 0), (8, 100, 0)):
        b = w.make_batch(sig)
        t0 = time.perf_counter(); w.step(b); firsts.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); w.step(b); steady.append(time.perf_counter() - t0)
    out[label] = {"first_step_s": firsts, "second_step_s": steady}
print(json.dumps(out))
"""


def compile_probe(timeout_s: float = 400.0) -> dict[str, Any]:
    """First and second step of three shapes of ``bert:tiny``, eager and ``torch.compile``d.

    Compiled twice in fresh processes sharing a new, empty inductor cache: ``compiled``
    is a cold compile (what a fresh machine pays), ``compiled_warm`` reuses that cache.
    """
    t0 = time.perf_counter()
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="inductor-") as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}
        try:
            for labels in (("eager", "compiled"), ("compiled_warm",)):
                proc = subprocess.run([sys.executable, "-c", _COMPILE_PROBE, *labels], capture_output=True,
                                      text=True, timeout=timeout_s, check=True, env=env)
                result.update(json.loads(proc.stdout.strip().splitlines()[-1]))
        except (subprocess.SubprocessError, ValueError, IndexError) as exc:
            result["error_message"] = _short(exc)
    result["seconds"] = time.perf_counter() - t0
    return result
