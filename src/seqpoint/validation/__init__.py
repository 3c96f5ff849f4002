"""Stage 8: validation against the ground truth (full runs, exact totals, baselines).

The names imported ``as`` themselves are for the CLI, the workflows, the integrations and
the tests; they are not in ``__all__``.
"""

from seqpoint.validation._compare import MeasuredSpeedup, error_vs_k, noise_floor
from seqpoint.validation._ddp import DDPRun as DDPRun
from seqpoint.validation._ddp import run_ddp as run_ddp
from seqpoint.validation._full_run import FullRun, run_full_fresh
from seqpoint.validation._full_run import FullRunError as FullRunError
from seqpoint.validation._saving import ProfilingSaving, reduction_factor
from seqpoint.validation._saving import profiling_saving as profiling_saving
from seqpoint.validation._trace import RunTrace, read_trace
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
]
