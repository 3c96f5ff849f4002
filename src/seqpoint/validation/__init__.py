"""Stage 8: validation against the ground truth (full runs, exact totals, baselines)."""

from seqpoint.validation._compare import (
    ErrorCurve,
    TruthComparison,
    error_vs_k,
    noise_floor,
    reduction_factor,
)
from seqpoint.validation._ddp import DDPRun, run_ddp
from seqpoint.validation._full_run import FullRun, FullRunError, run_full_fresh, run_full_schedule
from seqpoint.validation._saving import ProfilingSaving, break_even, profiling_saving
from seqpoint.validation._speedup import MeasuredSpeedup
from seqpoint.validation._trace import TRACE_COLUMNS, RunTrace, read_trace, write_trace

__all__ = [
    "TRACE_COLUMNS",
    "DDPRun",
    "ErrorCurve",
    "FullRun",
    "FullRunError",
    "MeasuredSpeedup",
    "ProfilingSaving",
    "RunTrace",
    "TruthComparison",
    "break_even",
    "error_vs_k",
    "noise_floor",
    "profiling_saving",
    "read_trace",
    "reduction_factor",
    "run_ddp",
    "run_full_fresh",
    "run_full_schedule",
    "write_trace",
]
