"""The one registry of metric names, the unit in the name, and every rule about them: **additive** metrics are
summed over a run (``time_s``, ``flops``, ``bytes``, ``breakdown_s.<category>`` ...); **peak** ones
(``peak_mem_bytes``) are a maximum; **spread** companions (``time_s_iqr``, ``time_s_first`` ...) summarise
repeats and are not projected; **bookkeeping** (``repeats``, ``processes``, oneDNN counts) records how a point
was measured; **per-process** values (:func:`per_process_key`) carry process-to-process drift into the
interval; **derived** totals (``first_occurrence_s``, ``run_time_s``) come from ``time_s`` and
``time_s_first``. The ``instructions`` timer measures a step in its own unit, under its own names
(``instructions``, ``instructions_first``, ..., derived ``run_instructions``): :func:`step_metric` names a
timer's step metric, :func:`derived_of` its derived totals."""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from seqpoint.exceptions import InputError
from seqpoint.measurements._records import Measurement

__all__ = ["BREAKDOWN_PREFIX", "CATEGORIES", "COLD_TIME", "COMPILE_TIME", "DERIVED", "FIRST_STEP_TIME", "INSTRUCTIONS",
           "ONEDNN_CACHE_CAPACITY", "ONEDNN_NEW", "ONEDNN_SHARED", "PROCESSES", "RUN_TIME", "STEADY_TIME",
           "breakdown_key", "breakdown_of", "derived_of", "first_of", "is_peak", "is_projectable", "is_spread",
           "per_process_key", "projectable_values", "relative_error", "shapes_held", "standard_error", "steady_metric", "step_metric",
           "time_metric", "unit_of"]

#: Operation categories of the "Demystifying BERT" study, in the order reports show them, and
#: ``communication`` (collectives: NCCL kernels, ``c10d`` operators).
CATEGORIES: tuple[str, ...] = ("gemm", "batched_gemm", "convolution", "rnn", "softmax", "layer_norm", "batch_norm",
                               "activation", "dropout", "elementwise", "reduction", "loss", "optimizer",
                               "communication", "copy", "other")

#: Median seconds of one steady-state training step.
STEADY_TIME = "time_s"
#: Seconds of a shape's first (cold) step, measured apart from the steady repeats.
FIRST_STEP_TIME = "time_s_first"
#: Projected seconds of the run's cold steps (first occurrences and cache evictions).
COLD_TIME = "first_occurrence_s"
#: Projected seconds of the whole run: steady state plus cold steps.
RUN_TIME = "run_time_s"
#: Projected seconds torch.compile costs the run once (part of ``run_time_s``; a compiled workload only).
COMPILE_TIME = "compile_s"
#: User-space instructions of one steady-state step, counted under callgrind (the
#: ``instructions`` timer; valgrind hides AVX-512, so the AVX2 code path is what is counted).
INSTRUCTIONS = "instructions"
#: Step metric to its derived totals: cold steps, whole run (steady state plus cold steps).
_DERIVED_OF: dict[str, tuple[str, str]] = {STEADY_TIME: (COLD_TIME, RUN_TIME),
                                           INSTRUCTIONS: ("first_occurrence_instructions", "run_instructions")}
#: Totals the projection derives from a step metric (``time_s``) and its first step (``time_s_first``).
DERIVED = frozenset(name for pair in _DERIVED_OF.values() for name in pair)

#: Prefix of per-category seconds in a projection's totals (``breakdown_s.gemm``).
BREAKDOWN_PREFIX = "breakdown_s."

#: oneDNN primitives a new shape creates, those every shape shares, and the cache size.
ONEDNN_NEW = "onednn_primitives_new"
ONEDNN_SHARED = "onednn_primitives_shared"
ONEDNN_CACHE_CAPACITY = "onednn_cache_capacity"
#: Worker processes a point's repeats were spread over (the multi-process protocol).
PROCESSES = "processes"
#: How a point was measured, not what it costs: never projected.
BOOKKEEPING = frozenset({"repeats", PROCESSES, ONEDNN_NEW, ONEDNN_SHARED, ONEDNN_CACHE_CAPACITY})

#: Suffixes of summary statistics of a metric's repeats (and its cold first step);
#: ``_sem`` is the standard error of the per-process values.
SPREAD_SUFFIXES: tuple[str, ...] = ("_iqr", "_std", "_stdev", "_var", "_mad", "_min", "_max", "_cv", "_n",
                                    "_repeats", "_first", "_sem")


def shapes_held(per_shape: int, shared: int, capacity: int) -> int:
    """Whole shapes oneDNN's LRU cache of ``capacity`` entries holds beside ``shared`` ones,
    each needing ``per_shape`` (> 0)."""
    return max(0, (capacity - shared) // per_shape)


def is_spread(name: str) -> bool:
    """True for a summary statistic of repeats (``time_s_iqr``) or a cold step (``time_s_first``)."""
    return name.endswith(SPREAD_SUFFIXES)


def is_projectable(name: str) -> bool:
    """True for a metric whose run total a projection computes (not spread, not bookkeeping)."""
    return not is_spread(name) and name not in BOOKKEEPING


def is_peak(name: str) -> bool:
    """True for a maximum over the run (peak memory), which is not summed."""
    return "peak" in name


def per_process_key(name: str) -> str:
    """The ``samples`` key of a metric's per-process values (``time_s`` → ``time_s_processes``)."""
    return f"{name}_processes"


def breakdown_key(category: str) -> str:
    """The projection key of an operation category's seconds (``breakdown_s.gemm``)."""
    return BREAKDOWN_PREFIX + category


def breakdown_of(totals: Mapping[str, float]) -> dict[str, float]:
    """Operation category → seconds from projected totals (the positive ``breakdown_s.*``)."""
    n = len(BREAKDOWN_PREFIX)
    return {k[n:]: float(v) for k, v in totals.items() if k.startswith(BREAKDOWN_PREFIX) and v > 0}


def step_metric(timer: str) -> str:
    """The metric a timer measures a step in: ``instructions`` for the ``instructions`` timer,
    else ``time_s`` (seconds)."""
    return INSTRUCTIONS if timer == INSTRUCTIONS else STEADY_TIME


def first_of(step: str) -> str:
    """The cold first step's metric of a step metric (``time_s`` → ``time_s_first``)."""
    return f"{step}_first"


def derived_of(step: str) -> tuple[str, str]:
    """The cold-step and whole-run totals derived from a step metric
    (``time_s`` → ``first_occurrence_s``, ``run_time_s``)."""
    return _DERIVED_OF[step]


def steady_metric(names: Container[str]) -> str | None:
    """The step metric among ``names`` (``time_s``, else ``instructions``), None without one."""
    return next((s for s in _DERIVED_OF if s in names), None)


def time_metric(totals: Mapping[str, float]) -> str:
    """The projected cost to compare with a measured run: ``run_time_s`` when projected
    (steady state plus cold steps), else ``time_s``; in instructions (no ``time_s``),
    ``run_instructions``, else ``instructions``."""
    step = steady_metric(totals) or STEADY_TIME
    run = derived_of(step)[1]
    return run if run in totals else step


def unit_of(name: str) -> str:
    """Unit of a metric by its name: ``s``, ``FLOP``, ``B``, ``instr`` or ``""``."""
    if name.endswith(INSTRUCTIONS) or name.startswith(INSTRUCTIONS):
        return "instr"
    if name.endswith("_s") or name.startswith(BREAKDOWN_PREFIX):
        return "s"
    if name.endswith("bytes") or name.startswith("bytes"):
        return "B"
    if name.startswith("flops"):
        return "FLOP"
    return ""


def projectable_values(m: Measurement) -> dict[str, float]:
    """A measurement's projectable values: its metrics and ``breakdown_s.<category>``."""
    out = {k: v for k, v in m.metrics.items() if is_projectable(k)}
    out.update({breakdown_key(k): v for k, v in m.breakdown_s.items()})
    return out


def standard_error(m: Measurement, name: str) -> float:
    """Standard error of a measured value: ``std/√n`` of its repeats, else ``iqr/1.349``, else 0.

    With two or more per-process values, at least their ``std/√P``: a process's repeats
    share its speed, so only the spread between processes shows how far the full run's can be.
    """
    reps = m.samples.get(name)
    per_process = m.samples.get(per_process_key(name))
    between = 0.0
    if per_process is not None and len(per_process) >= 2:
        arr = np.asarray(per_process, dtype=np.float64)
        between = float(arr.std(ddof=1) / np.sqrt(arr.size))
    if reps is not None and len(reps) >= 2:
        arr = np.asarray(reps, dtype=np.float64)
        return max(between, float(arr.std(ddof=1) / np.sqrt(arr.size)))
    if between > 0:
        return between
    iqr = m.metrics.get(f"{name}_iqr")  # the interquartile range of its repeats
    return 0.0 if iqr is None else float(iqr) / 1.349


@overload
def relative_error(pred: float, true: float) -> float: ...
@overload
def relative_error(pred: ArrayLike, true: ArrayLike) -> NDArray[np.float64]: ...


def relative_error(pred: ArrayLike, true: ArrayLike) -> float | NDArray[np.float64]:
    """Signed relative error ``(pred − true) / true`` (0.01 is 1% too high) of values broadcast
    together, ``true`` non-zero: a float for scalars, else an array."""
    t = np.asarray(true, dtype=np.float64)
    if np.any(t == 0):
        raise InputError("relative_error needs non-zero true values; got a true value of 0.")
    out = (np.asarray(pred, dtype=np.float64) - t) / t
    return float(out) if out.ndim == 0 else out
