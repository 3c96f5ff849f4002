"""How much profiling a projection saves, in steps, wall clock and tokens. Steps alone flatter a
short run whose SeqPoints are its longest shapes (a 362-step Hugging Face run: 4.5× fewer steps,
1.7× less wall clock), so the other two stand beside them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["ProfilingSaving", "break_even", "profiling_saving", "reduction_factor"]


def reduction_factor(n_iterations: int, n_points: int, *, warmup: int, repeats: int, profiled: int = 0,
                     overhead: int = 0) -> float:
    """Iterations of the full run over training steps executed to profile the points (warm-up,
    timed, under torch.profiler) and the campaign's ``overhead`` (``ProfileConfig.protocol_steps()``)."""
    executed = n_points * (warmup + repeats + profiled) + overhead
    return n_iterations / executed if executed else float("inf")


def break_even(profiling_s: float, run_s: float, n_iterations: int) -> float:
    """Iterations of the run's mix whose time equals ``profiling_s``: past this length,
    profiling costs less than one run (NaN when a time is unknown)."""
    if not (np.isfinite(profiling_s) and np.isfinite(run_s)) or run_s <= 0 or n_iterations <= 0:
        return float("nan")
    return profiling_s / (run_s / n_iterations)


@dataclass(frozen=True, kw_only=True)
class ProfilingSaving:
    """Profiling saving: the run's iterations over the steps executed to profile the points, its seconds
    (``run_s``) over theirs (``profiling_s``) and its padded tokens over theirs (NaN: no time measured)."""

    steps: float
    wall_clock: float
    tokens: float
    profiling_s: float
    run_s: float
    n_iterations: int = 0

    @property
    def break_even(self) -> float:
        """Run length, in iterations, past which profiling costs less than the run (:func:`break_even`)."""
        return break_even(self.profiling_s, self.run_s, self.n_iterations)

    def to_dict(self) -> dict[str, float]:
        return {"steps": self.steps, "wall_clock": self.wall_clock, "tokens": self.tokens,
                "profiling_s": self.profiling_s, "run_s": self.run_s, "break_even": self.break_even}


def _ratio(a: float, b: float) -> float:
    if not np.isfinite(a) or not np.isfinite(b):
        return float("nan")
    return a / b if b > 0 else float("inf")


def profiling_saving(run_tokens: ArrayLike, point_tokens: ArrayLike, *, warmup: int, repeats: int,
                     profiled: int = 0, run_s: float = float("nan"), point_step_s: ArrayLike | None = None,
                     point_first_s: ArrayLike | None = None, overhead: int = 0, overhead_s: float = 0.0
                     ) -> ProfilingSaving:
    """The saving of profiling the points instead of running the whole run: ``run_tokens`` (n_iterations,) and
    ``point_tokens`` (k,) are padded tokens; ``warmup``, ``repeats`` and ``profiled`` the steps per point;
    ``run_s`` the run's seconds; and ``point_step_s`` and ``point_first_s`` (k,) each point's steady and cold
    first step, seconds (NaN where a point failed, or its first step was not cold); ``overhead`` steps beside
    the points' (workers' start-up, drift checks, the in-sequence window), ``overhead_s`` the seconds of those
    that were timed.
    """
    run_tok = np.asarray(run_tokens, dtype=np.float64)
    pt_tok = np.asarray(point_tokens, dtype=np.float64)
    per_point = warmup + repeats + profiled
    steps = reduction_factor(len(run_tok), len(pt_tok), warmup=warmup, repeats=repeats, profiled=profiled,
                             overhead=overhead)
    tokens = _ratio(float(run_tok.sum()), float(pt_tok.sum()) * per_point)
    profiling_s = float("nan")
    if point_step_s is not None:
        step = np.asarray(point_step_s, dtype=np.float64)
        first = (np.full_like(step, np.nan) if point_first_s is None
                 else np.asarray(point_first_s, dtype=np.float64))
        cold = np.isfinite(first) & (warmup > 0)
        # A cold first step replaces one warm-up step at the steady time.
        spent = np.where(cold, first + (per_point - 1) * step, per_point * step)
        # A failed point (NaN) took unknown time; the others are what was spent.
        profiling_s = float(np.nansum(spent)) + overhead_s if np.any(np.isfinite(spent)) else float("nan")
    return ProfilingSaving(steps=steps, wall_clock=_ratio(run_s, profiling_s), tokens=tokens,
                           profiling_s=profiling_s, run_s=float(run_s), n_iterations=len(run_tok))
