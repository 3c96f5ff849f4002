"""Projected against measured speedups of configuration pairs a -> b.

Projected: each configuration profiled on the same SeqPoints in a fresh process of its
own, as its full run starts (every shape is new to it, so its first-occurrence term is
its own), the ratio of the projected run times. A process's speed can differ from the
next one's (allocator state, the shared VM), so this is done in two rounds (a, b, a, b)
and the mean of each configuration's projections is used; the rounds' spread is
reported.

Measured: ratio of full-run totals, a from ``validate``'s runs, b run the same way.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from _paper_cases import Case, Pair, Scale
from _paper_measured import in_fresh_process, profile_child
from seqpoint.measurements import Measurement
from seqpoint.projection import project, project_speedup
from seqpoint.validation import MeasuredSpeedup, run_full_fresh

ROUNDS = 2


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:240]


def _profile(case: Case, res: Any, overrides: dict[str, Any], processes: int) -> tuple[list[Measurement], Any]:
    rows = in_fresh_process(profile_child, case.workload, dict(overrides), res.seqpoints, processes)
    ms = [Measurement.from_dict(r) for r in rows]
    bad = [m for m in ms if not m.ok]
    if bad:
        raise RuntimeError(f"{len(bad)} point(s) failed: {bad[0].message}")
    return ms, project(res.schedule, res.seqpoints, ms)


def _metric(projections: list[Any]) -> str:
    """``run_time_s`` (steady state plus cold steps) when every projection has it."""
    return "run_time_s" if all("run_time_s" in p.totals for p in projections) else "time_s"


def speedup_pair(case: Case, scale: Scale, res: Any, pair: Pair) -> dict[str, Any]:
    """Projected (from the SeqPoints) against measured (full runs) speedup of a -> b."""
    t0 = time.perf_counter()
    over_b = {**case.overrides, **pair.change}
    rounds = [(_profile(case, res, case.overrides, scale.processes), _profile(case, res, over_b, scale.processes))
              for _ in range(ROUNDS)]
    pa = [a[1] for a, _ in rounds]
    pb = [b[1] for _, b in rounds]
    metric = _metric(pa + pb)
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
            out.append({"label": pair.label, "change": pair.change, "error_message": _short(exc)})
        print(f"    speedup {pair.label}: {_fmt_pair(out[-1])}", flush=True)
    return out


def _fmt_pair(p: dict[str, Any]) -> str:
    if "error_message" in p:
        return f"not run ({p['error_message']})"
    rounds = ", ".join(f"{x:.4f}" for x in p["per_round"])
    return (f"projected {p['projected']:.4f} (rounds: {rounds}), measured {p['measured']:.4f}, "
            f"error {100 * p['error']:+.2f}% (noise floor {100 * p['noise_floor']:.2f}%)")
