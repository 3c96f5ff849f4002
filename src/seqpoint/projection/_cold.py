"""Cold steps: a step meeting a tensor shape first, or again after oneDNN's LRU primitive cache
dropped it, pays primitive creation and kernel selection. :func:`cold_steps` finds them;
:func:`first_occurrence` projects their extra time from the points' cold first steps or, better
(one cold sample per point is noisy), from a timed in-sequence window of the run (:func:`window_extra`)."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from seqpoint._signature import FloatArray, IntArray
from seqpoint.exceptions import AdjustedInputWarning, InputError
from seqpoint.measurements import STEADY_TIME, Measurement, StepWindow
from seqpoint.measurements.metrics import (
    ONEDNN_CACHE_CAPACITY,
    ONEDNN_NEW,
    ONEDNN_SHARED,
    first_of,
    shapes_held,
)
from seqpoint.projection._model import PointProjector
from seqpoint.schedule import SignatureTable

__all__ = ["COLD_METHODS", "ColdTerm", "cold_steps", "first_occurrence", "window_ratio"]

#: Calibrations of the cold term: ``first_step`` (each point's cold first step), ``window``
#: (a timed in-sequence window's steps of a new shape), ``auto`` (the first steps; the window
#: when the points have none). A window also measures the in-run gap (:func:`window_ratio`).
COLD_METHODS = ("auto", "first_step", "window")


@dataclass(frozen=True, kw_only=True)
class ColdTerm:
    """Projected extra time of a run's cold steps."""

    total: float
    """Seconds over the run (``first_occurrence_s``)."""
    halfwidth: float
    """Half-width of its interval, seconds."""
    counts: dict[str, int]
    """Steps charged: ``first`` (one per shape) and ``evicted`` (met again after eviction)."""
    method: str = "first_step"
    """Calibration: ``first_step`` (the points' cold first steps) or ``window``."""
    relative_extra: float = 0.0
    """Extra of a cold step over its steady time, relative (the median over the samples)."""
    samples: int = 0
    """Cold steps the relative extra was estimated from."""
    in_run_ratio: float | None = None
    """Window only: median of a warm step's time over the points' fitted time; else None."""

    def to_dict(self, total: float | None = None) -> dict[str, object]:
        """The term as plain data; with the run's projected ``total``, its ``share`` of it."""
        out: dict[str, object] = {"total_s": self.total, "halfwidth_s": self.halfwidth, "method": self.method,
                                  "relative_extra": self.relative_extra, "samples": self.samples,
                                  "steps": dict(self.counts)}
        if self.in_run_ratio is not None:
            out["in_run_ratio"] = self.in_run_ratio
        if total:
            out["share"] = self.total / total
        return out


def window_extra(window: StepWindow, table: SignatureTable, fitted: FloatArray
                 ) -> tuple[FloatArray, float | None] | None:
    """What a timed window says of cold steps, against ``fitted`` (the points' steady seconds
    of every signature of ``table``): ``t / (steady · r) − 1`` of every step whose shape is new
    in the window (a fresh process), and ``r``, the median ``t / steady`` of its warm steps
    (None without one). None when no new step has a positive fit."""
    rows = window_rows(window, table.inverse, table.signatures)
    times = np.asarray(window.times_s, dtype=np.float64)
    steady = fitted[rows]
    new = cold_steps(table.shape_ids()[rows])  # first occurrences
    warm, cold = (steady > 0) & ~new, (steady > 0) & new
    if not cold.any():
        return None
    ratio = float(np.median(times[warm] / steady[warm])) if warm.any() else None
    rel = times[cold] / (steady[cold] * (1.0 if ratio is None else ratio)) - 1.0
    return rel, ratio


def window_rows(window: StepWindow, table_inverse: IntArray, signatures: IntArray) -> IntArray:
    """Signature-table index of every window step; InputError unless it is a stretch of this schedule."""
    stop = window.start + len(window.times_s)
    if stop > table_inverse.shape[0]:
        raise InputError(f"The measurements' step window (iterations {window.start}..{stop - 1}) runs past the "
                         f"schedule's {table_inverse.shape[0]} iterations; record it on this schedule.")
    rows = table_inverse[window.start:stop]
    ncol = signatures.shape[1]
    for i, (row, sig) in enumerate(zip(rows.tolist(), window.signatures, strict=True)):
        expected = tuple(int(v) for v in signatures[row])
        if tuple(sig[:ncol]) + (0,) * max(0, ncol - len(sig)) != expected:
            raise InputError(f"The measurements' step window has signature {tuple(sig)} at iteration "
                             f"{window.start + i}, but the schedule has {expected}; record the window on this "
                             "schedule.")
    return rows


def _steady(ok_meas: Sequence[Measurement], step: str) -> FloatArray | None:
    """The points' steady ``step`` metric (times), or None unless every point has one."""
    return np.array([m.metrics[step] for m in ok_meas]) if ok_meas and all(step in m.metrics for m in ok_meas) else None


def window_ratio(proj: PointProjector, ok_meas: Sequence[Measurement], window: StepWindow, term: ColdTerm, *,
                 step: str = STEADY_TIME) -> float | None:
    """The in-run ratio ``r``: the window's measured time over what the projection charges for its
    steps, each step's fitted steady time plus, for a shape new in the window (a fresh process),
    ``term``'s cold extra. Warm and cold steps alike: a run whose own steps cost more than the
    isolated points (allocator churn, cold shapes dearer in sequence) shows as ``r > 1``. None
    without a steady time or a positive charge."""
    steady = _steady(ok_meas, step)
    if steady is None:
        return None
    table = proj.model.table
    rows = window_rows(window, table.inverse, table.signatures)
    new = cold_steps(table.shape_ids()[rows])
    extra = max(term.relative_extra, 0.0) * (term.in_run_ratio or 1.0)
    charged = float((np.clip(proj.fitted(steady), 0.0, None)[rows] * (1.0 + extra * new)).sum())
    return float(np.sum(window.times_s)) / charged if charged > 0 else None


def first_occurrence(proj: PointProjector, ok_meas: Sequence[Measurement], z: float, *,
                     window: StepWindow | None = None, step: str = STEADY_TIME) -> ColdTerm | None:
    """The run's cold steps (:func:`cold_steps`): the median relative extra ``t_cold / t_steady − 1`` of the
    samples (each point's cold first step, or the ``window``'s steps of a new shape) times the fitted steady
    time of every cold step (a median: one disturbed sample must not spread over hundreds of shapes), ± ``z``
    times the median's standard error (1.2533 · 1.4826 · MAD / √n) times the same. None without samples or a
    steady time. ``step`` is the step metric the term is in (``time_s``, or ``instructions``)."""
    steady = _steady(ok_meas, step)
    first = first_of(step)
    if steady is None or not (steady > 0).any():
        return None
    table = proj.model.table
    shape_of, fitted = table.shape_ids(), np.clip(proj.fitted(steady), 0.0, None)
    ratio: float | None = None
    if window is not None:
        extra = window_extra(window, table, fitted)
        if extra is None:
            return None
        rel, ratio = extra
    else:
        if not all(first in m.metrics for m in ok_meas):
            return None
        good = steady > 0
        rel = np.array([m.metrics[first] for m in ok_meas])[good] / steady[good] - 1.0
    per_shape = np.bincount(shape_of).astype(np.float64)
    shape_cost = np.bincount(shape_of, weights=fitted) / per_shape  # mean fitted time of each shape
    run_shapes = shape_of[table.inverse]
    cold = cold_steps(run_shapes, **_primitive_cache(ok_meas))
    cold_total = float(shape_cost[run_shapes[cold]].sum()) * (ratio if ratio is not None else 1.0)
    centre, k = float(np.median(rel)), rel.shape[0]
    se = 1.2533 * 1.4826 * float(np.median(np.abs(rel - centre))) / np.sqrt(k) if k >= 2 else abs(centre)
    if -centre > se:
        # Cold steps do not cost less than warm ones beyond their own spread: the clock moved
        # while the points were timed. Said, not hidden.
        warnings.warn(f"The SeqPoints' cold steps measured {-100 * centre:.1f}% cheaper than their steady "
                      "steps (timing noise, or the machine slowed while they were timed): the cold-step term is "
                      "taken as 0, its interval still counts their spread. Profile again on a quieter "
                      "machine, or with more worker processes.", AdjustedInputWarning, stacklevel=2)
    n_first = per_shape.shape[0]  # every shape of the table occurs in the run once first
    return ColdTerm(total=max(centre, 0.0) * cold_total, halfwidth=z * se * cold_total, in_run_ratio=ratio,
                    counts={"first": n_first, "evicted": int(cold.sum()) - n_first}, relative_extra=centre,
                    method="first_step" if window is None else "window", samples=int(k))


def _primitive_cache(ok_meas: Sequence[Measurement]) -> dict[str, int]:
    """``cold_steps`` arguments from the recorded oneDNN counts (median over the points)."""
    names = (ONEDNN_NEW, ONEDNN_SHARED, ONEDNN_CACHE_CAPACITY)
    if not all(all(n in m.metrics for n in names) for m in ok_meas):
        return {}
    new, shared, cap = (int(np.median([m.metrics[n] for m in ok_meas])) for n in names)
    return {"per_shape": new, "shared": shared, "capacity": cap}


def cold_steps(shapes: ArrayLike, *, per_shape: int = 0, shared: int = 0, capacity: int = 0) -> NDArray[np.bool_]:
    """Which steps of a run, given the shape id of every step in run order (n_iterations,), meet their shape
    cold (True): first occurrences and cache misses. oneDNN keeps every shape's primitives in one LRU cache of
    ``capacity`` entries; each step uses ``per_shape`` entries of its own and ``shared`` ones. A step whose
    shape was last used ``d`` distinct shapes ago is evicted when ``shared + per_shape · (d + 1) > capacity``.
    With ``per_shape = 0`` (GPU, no counts) only first occurrences are cold."""
    seq = np.asarray(shapes, dtype=np.int64).reshape(-1)
    cold = np.zeros(seq.shape[0], dtype=bool)
    if per_shape <= 0 or capacity <= 0:
        cold[np.unique(seq, return_index=True)[1]] = True
        return cold
    # Whole shapes the cache holds beside the shared entries: by Mattson's stack
    # property the entry-level LRU misses exactly when a shape-level LRU of this size does.
    evict_at = shapes_held(per_shape, shared, capacity)
    cache: OrderedDict[int, None] = OrderedDict()
    for i, shape in enumerate(seq.tolist()):
        if shape in cache:
            cache.move_to_end(shape)
            continue
        cold[i] = True
        cache[shape] = None
        if len(cache) > evict_at:
            cache.popitem(last=False)
    return cold
