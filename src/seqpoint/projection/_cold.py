"""Cold steps: the one-time costs a run pays when it meets a tensor shape cold.

A run meets each tensor shape once for the first time, and that step pays one-time
costs (primitive creation, kernel selection) that the steady-state repeats do not. On
CPU, oneDNN also keeps the primitives in an LRU cache of bounded size, so a shape not
used for a while is cold again. :func:`cold_steps` finds the cold steps of a run (LRU
stack-distance model); :func:`first_occurrence` projects their extra time
(``first_occurrence_s``) from the points' cold first steps.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from seqpoint.measurements import (
    FIRST_STEP_TIME,
    ONEDNN_CACHE_CAPACITY,
    ONEDNN_NEW,
    ONEDNN_SHARED,
    STEADY_TIME,
    Measurement,
)
from seqpoint.projection._model import PointProjector

__all__ = ["ColdTerm", "cold_steps", "first_occurrence"]


@dataclass(frozen=True, kw_only=True)
class ColdTerm:
    """Projected extra time of a run's cold steps."""

    total: float
    """Seconds over the run (``first_occurrence_s``)."""
    halfwidth: float
    """Half-width of its interval, seconds."""
    counts: dict[str, int]
    """Steps charged: ``first`` (one per shape) and ``evicted`` (met again after eviction)."""


def first_occurrence(proj: PointProjector, ok_meas: Sequence[Measurement], z: float) -> ColdTerm | None:
    """Total, half-width and counts (``first``, ``evicted``) of the run's cold steps.

    Each point's cold first step gives its relative extra ``time_s_first / time_s − 1``;
    the total is their median times the fitted steady-state time of every cold step
    (packed signatures that differ only in ``sum_sq_len`` share a shape). The median,
    not a fit through every point: a cold step is a single sample, and one disturbed
    sample must not be spread over hundreds of shapes (interpolating the raw extras
    projected 19% of a run where the real in-sequence extra was 2%). The half-width is
    the standard error of the median (1.2533 · 1.4826 · MAD / √k) times the same
    steady-state total, times z.

    Cold steps are the first occurrence of each shape and, when the measurements carry
    oneDNN primitive counts (CPU), every step whose shape's primitives an LRU cache of
    the measured capacity has evicted since its last use (see :func:`cold_steps`).

    Returns
    -------
    ColdTerm or None
        None when a point lacks ``time_s_first`` or ``time_s``, or no steady time is > 0.
    """
    if not ok_meas or not all(FIRST_STEP_TIME in m.metrics and STEADY_TIME in m.metrics for m in ok_meas):
        return None
    steady = np.array([m.metrics[STEADY_TIME] for m in ok_meas])
    first = np.array([m.metrics[FIRST_STEP_TIME] for m in ok_meas])
    good = steady > 0
    if not good.any():
        return None
    rel = first[good] / steady[good] - 1.0
    table = proj.model.table
    shape_of = table.shape_ids()
    fitted = np.clip(proj.fitted(steady), 0.0, None)
    per_shape = np.bincount(shape_of).astype(np.float64)
    shape_cost = np.bincount(shape_of, weights=fitted) / per_shape
    run_shapes = shape_of[table.inverse]
    cold = cold_steps(run_shapes, **_primitive_cache(ok_meas))
    cold_total = float(shape_cost[run_shapes[cold]].sum())
    centre = float(np.median(rel))
    k = rel.shape[0]
    if k >= 2:
        mad = float(np.median(np.abs(rel - centre)))
        se = 1.2533 * 1.4826 * mad / np.sqrt(k)
    else:
        se = abs(centre)
    n_first = per_shape.shape[0]  # every shape of the table occurs in the run once first
    counts = {"first": n_first, "evicted": int(cold.sum()) - n_first}
    return ColdTerm(total=max(centre, 0.0) * cold_total, halfwidth=z * se * cold_total, counts=counts)


def _primitive_cache(ok_meas: Sequence[Measurement]) -> dict[str, int]:
    """``cold_steps`` arguments from the oneDNN counts the harness recorded (median)."""
    names = (ONEDNN_NEW, ONEDNN_SHARED, ONEDNN_CACHE_CAPACITY)
    if not all(all(n in m.metrics for n in names) for m in ok_meas):
        return {}
    new, shared, cap = (int(np.median([m.metrics[n] for m in ok_meas])) for n in names)
    return {"per_shape": new, "shared": shared, "capacity": cap}


def cold_steps(
    shapes: ArrayLike, *, per_shape: int = 0, shared: int = 0, capacity: int = 0
) -> NDArray[np.bool_]:
    """Which steps of a run meet their shape cold: first occurrences and cache misses.

    oneDNN keeps the primitives of every shape in one LRU cache of ``capacity`` entries
    per process; each step uses its shape's ``per_shape`` entries and ``shared`` entries
    that every shape uses. A step whose shape was last used ``d`` distinct other shapes
    ago finds its primitives evicted when ``shared + per_shape · (d + 1) > capacity``
    (the LRU stack-distance rule), and pays its one-time costs again. With ``per_shape = 0``
    (no counts: GPU, a library without a cache) only first occurrences are cold.

    Parameters
    ----------
    shapes : array_like of int, shape (n_iterations,)
        Shape id of every step, in run order.
    per_shape, shared, capacity : int
        Entries new per shape, entries shared by all shapes, cache capacity.

    Returns
    -------
    ndarray of bool, shape (n_iterations,)
        True where the step is cold.
    """
    seq = np.asarray(shapes, dtype=np.int64).reshape(-1)
    if per_shape <= 0 or capacity <= 0:
        _, first = np.unique(seq, return_index=True)
        cold = np.zeros(seq.shape[0], dtype=bool)
        cold[first] = True
        return cold
    # Whole shapes the cache holds beside the shared entries: by Mattson's stack
    # property the entry-level LRU misses exactly when a shape-level LRU of this size does.
    evict_at = max(0, (capacity - shared) // per_shape)
    cache: OrderedDict[int, None] = OrderedDict()
    cold = np.zeros(seq.shape[0], dtype=bool)
    for i, shape in enumerate(seq.tolist()):
        if shape in cache:
            cache.move_to_end(shape)
            continue
        cold[i] = True
        cache[shape] = None
        if len(cache) > evict_at:
            cache.popitem(last=False)
    return cold
