"""Sections that time real training steps: projection against measured full runs (with
their noise floor), projected against measured speedups, and the operation breakdown.

``seqpoint.pipeline.validate`` does the measured-time validation of a case: it profiles
the SeqPoints and every baseline's points at the same budget, runs the whole schedule
``runs`` times in fresh processes (their spread is the noise floor) and compares.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from _paper_cases import REPEATS, WARMUP, Case, Pair, Scale, run_config
from seqpoint.cache import MeasurementCache
from seqpoint.exceptions import SeqPointWarning
from seqpoint.pipeline import validate
from seqpoint.profiling import Measurement, ProfileConfig, profile_points
from seqpoint.projection import project, project_speedup
from seqpoint.schedule import IterationSchedule
from seqpoint.workloads import load_workload


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:240]


def measured_case(case: Case, scale: Scale, out: Path, cache: Path) -> tuple[dict[str, Any], Any]:
    """Validate ``case`` against measured full runs; returns (JSON entry, ValidationResult)."""
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
    entry["executed_steps"] = len(res.seqpoints) * (WARMUP + REPEATS)
    t1 = time.perf_counter()
    entry["breakdown"] = breakdown(case, cfg, res)
    entry["breakdown_s"] = time.perf_counter() - t1
    return entry, res


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
    pc = ProfileConfig(warmup=sec.warmup, repeats=sec.repeats, timer=sec.timer, metrics=sec.metrics)
    ms = profile_points(workload, [tuple(int(v) for v in row) for row in sig], pc,
                        cache=MeasurementCache(sec.cache), progress=False)
    measured: dict[str, float] = {}
    for m, c in zip(ms.measurements, counts.tolist(), strict=True):
        for cat, s in m.breakdown_s.items():
            measured[cat] = measured.get(cat, 0.0) + c * s
    return {"projected_s": projected, "measured_s": measured, "n_signatures": int(sig.shape[0]),
            "failed": sum(not m.ok for m in ms.measurements)}


def full_runs(spec: str, overrides: dict[str, Any], schedule: IterationSchedule, runs: int) -> Any:
    """Timed full runs, each in a fresh process when the library offers it."""
    import seqpoint.validation as v

    fresh = getattr(v, "run_full_fresh", None)
    if fresh is not None:
        return fresh(spec, dict(overrides), schedule, runs=runs)
    return v.run_full_schedule(load_workload(spec, overrides=overrides), schedule, runs=runs,
                               warmup=WARMUP)


def _profile_child(spec: str, overrides: dict[str, Any], points: Any) -> list[dict[str, Any]]:
    pc = ProfileConfig(warmup=WARMUP, repeats=REPEATS, metrics=("time",))
    ms = profile_points(load_workload(spec, overrides=overrides), points, pc, progress=False)
    return [m.to_dict() for m in ms.measurements]


def profile_fresh(spec: str, overrides: dict[str, Any], points: Any) -> list[Measurement]:
    """Time ``points`` with the harness in a fresh process.

    A process that has run torch.profiler (the breakdown) and then changes its thread
    count was seen to run the next steps several times slower; a fresh process per
    configuration keeps a and b alike, as their full runs are.
    """
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        rows = pool.submit(_profile_child, spec, dict(overrides), points).result()
    return [Measurement.from_dict(r) for r in rows]


def speedup_pair(case: Case, scale: Scale, res: Any, pair: Pair) -> dict[str, Any]:
    """Projected (from the SeqPoints) against measured (full runs) speedup of a -> b."""
    t0 = time.perf_counter()
    over_b = {**case.overrides, **pair.change}
    # a and b measured back to back, so a drift of the shared machine hits both alike.
    ma = profile_fresh(case.workload, case.overrides, res.seqpoints)
    mb = profile_fresh(case.workload, over_b, res.seqpoints)
    bad = [m for m in mb if not m.ok]
    if bad:
        raise RuntimeError(f"configuration b failed at {len(bad)} point(s): {bad[0].message}")
    sp = project_speedup(res.schedule, res.seqpoints, ma, mb)
    value, (lo, hi), metric = _run_time_speedup(res.schedule, res.seqpoints, ma, mb)
    fa = res.full
    fb = full_runs(case.workload, over_b, res.schedule, scale.runs)
    ratios = np.array([a / b for a in fa.totals_s for b in fb.totals_s])
    measured = float(fa.total_s / fb.total_s)
    return {
        "label": pair.label, "change": pair.change, "metric": metric, "projected": value,
        "interval": [lo, hi], "steady_projected": sp.value, "steady_interval": list(sp.interval),
        "steady_error": (sp.value - measured) / measured,
        "measured": measured, "error": (value - measured) / measured,
        # Spread of a/b over every pairing of a's and b's identical runs.
        "noise_floor": float((ratios.max() - ratios.min()) / ratios.mean()),
        "noise_a": fa.noise_floor, "noise_b": fb.noise_floor,
        "measured_a_s": fa.total_s, "measured_b_s": fb.total_s,
        "projected_a_s": sp.total_a, "projected_b_s": sp.total_b,
        "within_interval": bool(lo <= measured <= hi), "seconds": time.perf_counter() - t0,
    }


def _run_time_speedup(schedule: IterationSchedule, seqpoints: Any, ma: list[Measurement],
                      mb: list[Measurement]) -> tuple[float, tuple[float, float], str]:
    """Speedup of the projected run times (steady state plus first occurrences), with interval.

    ``project_speedup(metric="run_time_s")`` raises (``project`` does not accept the
    derived ``run_time_s`` in ``metrics``), so the ratio is taken here from two full
    projections; its interval adds the two totals' relative half-widths (no cancellation
    assumed). Falls back to ``time_s`` when no first-occurrence term was projected.
    """
    pa, pb = project(schedule, seqpoints, ma), project(schedule, seqpoints, mb)
    metric = "run_time_s" if "run_time_s" in pa.totals and "run_time_s" in pb.totals else "time_s"
    s = pa.totals[metric] / pb.totals[metric]
    half = s * (pa.relative_halfwidth(metric) + pb.relative_halfwidth(metric))
    return s, (s - half, s + half), metric


def speedups(case: Case, scale: Scale, res: Any) -> list[dict[str, Any]]:
    """Every pair of ``case`` (up to the mode's cap); a pair that cannot run says why."""
    out = []
    for pair in case.pairs[: scale.pairs_per_workload]:
        try:
            out.append(speedup_pair(case, scale, res, pair))
        except Exception as exc:  # a configuration this CPU cannot run is reported, not fatal
            out.append({"label": pair.label, "change": pair.change, "error_message": _short(exc)})
        print(f"    speedup {pair.label}: {_fmt_pair(out[-1])}", flush=True)
    return out


def _fmt_pair(p: dict[str, Any]) -> str:
    if "error_message" in p:
        return f"not run ({p['error_message']})"
    return (f"projected {p['projected']:.4f}, measured {p['measured']:.4f}, "
            f"error {100 * p['error']:+.2f}% (noise floor {100 * p['noise_floor']:.2f}%)")


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
