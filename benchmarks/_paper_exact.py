"""Sections that need no timing: projection error of exact deterministic totals, the
calibration of the error estimates, and paper-scale profiling reduction from schedules.

Exact per-iteration costs come from ``exact_signature_costs`` (a meta-device step:
FLOPs, bytes and a roofline time per named GPU; every unique signature counted, or a
per-operator polynomial fit verified exactly on held-out signatures where one holds);
every selector then projects them from its k points and weights, and the projection is
compared with their exact sum, which is the total the tool reports (``exact_totals``).
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from _paper_cases import (
    EXACT_METRICS,
    METHODS,
    PAPER_RUNS,
    RANDOMISED,
    REPEATS,
    WARMUP,
    Case,
    Scale,
    det_schedule,
    paper_schedule,
)
from seqpoint.exceptions import SeqPointWarning
from seqpoint.measurements import Measurement
from seqpoint.profiling import exact_signature_costs
from seqpoint.projection import ScheduleModel, project, project_cost
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPointSelector, make_selector, weighted_projection
from seqpoint.workloads import load_workload

FloatArray = NDArray[np.float64]
#: The SeqPoints' interpolated projection (``project(method="interpolated")``), reported beside.
INTERP = "seqpoint_interp"
#: Error targets of the ``max_error`` selection (fractions).
MAX_ERRORS = (0.01, 0.001)


class Counter:
    """Exact costs per signature, counted once per (workload, config, signature)."""

    def __init__(self) -> None:
        self._workloads: dict[str, Any] = {}
        self._costs: dict[tuple[str, tuple[int, ...]], dict[str, float]] = {}
        self.seconds = 0.0
        """Time spent in ``exact_signature_costs``."""
        self.counted = 0
        """Signatures counted on the meta device."""
        self.methods: dict[str, str] = {}
        """Workload key to how its exact costs were obtained (``count``, ``fit``...)."""

    def per_signature(self, spec: str, overrides: dict[str, Any], sigs: NDArray[np.int64]) -> dict[str, FloatArray]:
        """Every metric of ``EXACT_METRICS`` for each row of ``sigs``, shape ``(m,)`` each."""
        key = f"{spec} {sorted(overrides.items())}"
        if key not in self._workloads:
            self._workloads[key] = load_workload(spec, overrides=overrides)
        workload = self._workloads[key]
        todo = [j for j, row in enumerate(sigs) if (key, tuple(int(v) for v in row)) not in self._costs]
        if todo:
            t0 = time.perf_counter()
            per_sig, method, counted, note, *_ = exact_signature_costs(workload, sigs[todo])
            self.seconds += time.perf_counter() - t0
            self.counted += counted
            self.methods[key] = method + (f" ({note})" if note else "")
            for i, j in enumerate(todo):
                self._costs[(key, tuple(int(v) for v in sigs[j]))] = {m: float(per_sig[m][i]) for m in EXACT_METRICS}
        hits = [self._costs[(key, tuple(int(v) for v in row))] for row in sigs]
        return {m: np.array([h[m] for h in hits], dtype=np.float64) for m in EXACT_METRICS}


def _fit(method: str, k: int, seed: int, schedule: IterationSchedule) -> Any:
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        return make_selector(method, n_points=k, random_state=seed).fit(schedule)


def _interval_check(schedule: IterationSchedule, sel: Any, cost: dict[str, FloatArray],
                    totals: dict[str, float], model: ScheduleModel) -> dict[str, Any]:
    """Does ``project()``'s interval (noise-free here) contain each exact total?"""
    sps = sel.to_seqpoints(schedule)  # one point per row of points_, in that order
    meas = []
    for p, row in zip(sps.points, sel.points_.tolist(), strict=True):
        meas.append(Measurement(iteration=p.iteration, batch_size=p.batch_size, seq_len=p.seq_len,
                                tgt_len=p.tgt_len, sum_sq_len=p.sum_sq_len,
                                metrics={m: float(cost[m][row]) for m in EXACT_METRICS}))
    proj = project(schedule, sps, meas, method="weighted", metrics=list(EXACT_METRICS), context=model)
    out: dict[str, Any] = {}
    for m in EXACT_METRICS:
        lo, hi = proj.interval[m]
        out[m] = {"inside": bool(lo <= totals[m] <= hi),
                  "halfwidth": proj.relative_halfwidth(m),
                  "error": (proj.totals[m] - totals[m]) / totals[m]}
    bound = getattr(sel, "estimated_error_", None)
    out["bound"] = None if bound is None else float(bound)
    return out


def exact_case(case: Case, scale: Scale, counter: Counter) -> dict[str, Any]:
    """Error against k of every method on the exact totals of ``case``'s deterministic run."""
    t_start = time.perf_counter()
    schedule = det_schedule(case, scale)
    sig, _, inverse = schedule.unique_signatures()
    t0 = time.perf_counter()
    per_sig = counter.per_signature(case.workload, case.overrides, sig)
    count_s = time.perf_counter() - t0
    cost = {m: v[inverse] for m, v in per_sig.items()}
    totals = {m: float(v.sum()) for m, v in cost.items()}
    model = ScheduleModel.from_schedule(schedule)  # shared by every projection of this run

    curves: dict[str, dict[str, list[float]]] = {INTERP: {m: [] for m in EXACT_METRICS}}
    calibration: list[dict[str, Any]] = []
    ks = [k for k in scale.ks if k <= len(schedule)]
    for method in METHODS:
        curves[method] = {m: [] for m in EXACT_METRICS}
        for k in ks:
            errs: dict[str, list[float]] = {m: [] for m in EXACT_METRICS}
            for seed in range(scale.seeds if method in RANDOMISED else 1):
                sel = _fit(method, k, seed, schedule)
                for m in EXACT_METRICS:
                    est = weighted_projection(cost[m], sel.points_, sel.weights_)
                    errs[m].append((est - totals[m]) / totals[m])
                if method == "seqpoint":
                    calibration.append({"k": k, **_interval_check(schedule, sel, cost, totals, model)})
                    for m in EXACT_METRICS:
                        est = project_cost(schedule, sel, cost[m], method="interpolated", context=model)
                        curves[INTERP][m].append((est - totals[m]) / totals[m])
            for m in EXACT_METRICS:
                e = errs[m]
                # Signed for deterministic selectors, mean |error| over seeds otherwise.
                curves[method][m].append(float(np.mean(np.abs(e))) if len(e) > 1 else float(e[0]))

    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        sels = [SeqPointSelector(max_error=target).fit(schedule) for target in MAX_ERRORS]
    auto = [{"max_error": target, "k": int(sel.n_points_), "bound": float(sel.estimated_error_),
             "errors": {m: (weighted_projection(cost[m], sel.points_, sel.weights_) - totals[m]) / totals[m]
                        for m in EXACT_METRICS}} for target, sel in zip(MAX_ERRORS, sels, strict=True)]
    # Table order: the paper's weighted SeqPoint projection, its interpolated variant, baselines.
    curves = {"seqpoint": curves["seqpoint"], INTERP: curves[INTERP],
              **{k: v for k, v in curves.items() if k not in ("seqpoint", INTERP)}}
    return {
        "title": case.title, "workload": case.workload, "policy": case.policy,
        "params": case.params, "source": case.source,
        "samples": case.det_samples_quick if scale.quick else None,
        "epochs": int(schedule.n_epochs), "n_iterations": len(schedule),
        "n_signatures": int(sig.shape[0]), "totals": totals, "ks": ks, "curves": curves,
        "calibration": calibration, "auto": auto, "count_s": count_s,
        "exact_method": counter.methods.get(f"{case.workload} {sorted(case.overrides.items())}", ""),
        "seconds": time.perf_counter() - t_start,
    }


def paper_scale() -> list[dict[str, Any]]:
    """Profiling reduction of paper-scale runs, from their (synthesised) schedules alone."""
    steps, out = WARMUP + REPEATS, []
    for run in PAPER_RUNS:
        t0 = time.perf_counter()
        with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
            schedule = paper_schedule(run)
            sels = [SeqPointSelector(max_error=t).fit(schedule) for t in MAX_ERRORS]
            sels.append(SeqPointSelector(n_points=10).fit(schedule))
        n, padded = len(schedule), schedule.padded_tokens.astype(np.float64)
        rows = [{"max_error": target, "k": int(sel.n_points_), "bound": float(sel.estimated_error_),
                 "reduction": n / (int(sel.n_points_) * steps),
                 "token_reduction": float(padded.sum() / (steps * padded[sel.points_].sum()))}
                for target, sel in zip((*MAX_ERRORS, None), sels, strict=True)]
        out.append({
            "title": run.title, "note": run.note, "n_samples": run.n_samples,
            "epochs": int(schedule.n_epochs), "n_iterations": n,
            "n_signatures": int(schedule.unique_signatures()[0].shape[0]), "selections": rows,
            "seconds": time.perf_counter() - t0,
        })
    return out
