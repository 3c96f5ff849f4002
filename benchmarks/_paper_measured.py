"""The paper table's timed sections: projection against measured full runs (with their
noise floor), the operation breakdown, and projected against measured speedups.

``seqpoint.workflows.validate`` validates a case: it profiles the SeqPoints and every
baseline's points at the same budget, runs the whole schedule ``runs`` times in fresh
processes (their spread is the noise floor) and compares. A speedup pair a -> b profiles
each configuration on the same SeqPoints in a fresh process of its own (every shape is new
to it, as in its full run), in two rounds (a, b, a, b) because a process's speed differs
from the next one's; measured, it is the ratio of full-run totals, a's from ``validate``.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from _paper_cases import Case, Pair, Scale, in_fresh_process, profile_child, run_config
from seqpoint.cache import MeasurementCache
from seqpoint.exceptions import SeqPointWarning
from seqpoint.measurements import Measurement
from seqpoint.profiling import profile_points
from seqpoint.projection import project, project_speedup
from seqpoint.validation import MeasuredSpeedup, run_full_fresh
from seqpoint.workflows import validate
from seqpoint.workloads import load_workload

ROUNDS = 2


def short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:240]


def _validate_child(case: Case, scale: Scale, out: Path, cache: Path,
                    with_breakdown: bool = True) -> tuple[dict[str, Any], Any]:
    cfg = run_config(case, scale, out, cache)
    t0 = time.perf_counter()
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        res = validate(cfg, ks=scale.ks, exact=False)
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


def _profile(case: Case, res: Any, overrides: dict[str, Any], processes: int) -> tuple[list[Measurement], Any]:
    rows = in_fresh_process(profile_child, case.workload, dict(overrides), res.seqpoints, processes)
    ms = [Measurement.from_dict(r) for r in rows]
    bad = [m for m in ms if not m.ok]
    if bad:
        raise RuntimeError(f"{len(bad)} point(s) failed: {bad[0].message}")
    return ms, project(res.schedule, res.seqpoints, ms)


def speedup_pair(case: Case, scale: Scale, res: Any, pair: Pair) -> dict[str, Any]:
    """Projected (from the SeqPoints) against measured (full runs) speedup of a -> b."""
    t0 = time.perf_counter()
    over_b = {**case.overrides, **pair.change}
    rounds = [(_profile(case, res, case.overrides, scale.processes), _profile(case, res, over_b, scale.processes))
              for _ in range(ROUNDS)]
    pa, pb = [a[1] for a, _ in rounds], [b[1] for _, b in rounds]
    # run_time_s (steady state plus cold steps) when every projection has it
    metric = "run_time_s" if all("run_time_s" in p.totals for p in pa + pb) else "time_s"
    ta = np.array([p.totals[metric] for p in pa])
    tb = np.array([p.totals[metric] for p in pb])
    value = float(ta.mean() / tb.mean())
    # The ratio of the rounds' mean totals (project_speedup sees one round): the interval
    # adds both totals' relative half-widths and the rounds' spread.
    rel = np.mean([p.relative_halfwidth(metric) for p in pa]) + np.mean([p.relative_halfwidth(metric) for p in pb])
    per_round = ta / tb
    half = value * rel + float(per_round.max() - per_round.min()) / 2
    steady = float(np.mean([project_speedup(res.schedule, res.seqpoints, a[0], b[0]).value
                            for a, b in rounds]))
    fa = res.full
    fb = run_full_fresh(case.workload, dict(over_b), res.schedule, runs=scale.runs)
    # Only its pairing-free noise floor: a's runs here were not timed beside b's.
    paired = MeasuredSpeedup(tuple(fa.totals_s), tuple(fb.totals_s))
    measured = float(fa.total_s / fb.total_s)
    lo, hi = value - half, value + half
    return {
        "label": pair.label, "change": pair.change, "metric": metric, "projected": value,
        "interval": [lo, hi], "per_round": per_round.tolist(),
        "projected_a_s": ta.tolist(), "projected_b_s": tb.tolist(),
        "steady_projected": steady, "steady_error": (steady - measured) / measured,
        "measured": measured, "error": (value - measured) / measured,
        # Spread of a/b over every pairing of a's and b's identical runs.
        "noise_floor": paired.noise_floor,
        "noise_a": fa.noise_floor, "noise_b": fb.noise_floor,
        "measured_a_s": fa.total_s, "measured_b_s": fb.total_s,
        "within_interval": bool(lo <= measured <= hi), "seconds": time.perf_counter() - t0,
    }


def speedups(case: Case, scale: Scale, res: Any) -> list[dict[str, Any]]:
    """Every pair of ``case`` (up to the mode's cap); a pair that cannot run says why."""
    out = []
    for pair in case.pairs[: scale.pairs_per_workload]:
        try:
            out.append(speedup_pair(case, scale, res, pair))
        except Exception as exc:  # a configuration this CPU cannot run is reported, not fatal
            out.append({"label": pair.label, "change": pair.change, "error_message": short(exc)})
        print(f"    speedup {pair.label}: {_fmt_pair(out[-1])}", flush=True)
    return out


def _fmt_pair(p: dict[str, Any]) -> str:
    if "error_message" in p:
        return f"not run ({p['error_message']})"
    rounds = ", ".join(f"{x:.4f}" for x in p["per_round"])
    return (f"projected {p['projected']:.4f} (rounds: {rounds}), measured {p['measured']:.4f}, "
            f"error {100 * p['error']:+.2f}% (noise floor {100 * p['noise_floor']:.2f}%)")
