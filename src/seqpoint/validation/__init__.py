"""Stage 8: validation against the ground truth (full runs, exact totals, baselines)."""

from seqpoint.validation._compare import error_vs_k, noise_floor, reduction_factor
from seqpoint.validation._full_run import FullRun, run_full_fresh, run_full_schedule
from seqpoint.validation._saving import ProfilingSaving
from seqpoint.validation._speedup import MeasuredSpeedup
from seqpoint.validation._trace import RunTrace, read_trace

# Not in __all__: reached by the CLI, the integrations and the tests, not by users.
from seqpoint.validation._trace import write_trace as write_trace

__all__ = [
    "FullRun",
    "MeasuredSpeedup",
    "ProfilingSaving",
    "RunTrace",
    "error_vs_k",
    "noise_floor",
    "read_trace",
    "reduction_factor",
    "run_full_fresh",
    "run_full_schedule",
]
