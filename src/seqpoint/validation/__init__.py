"""Stage 8: validation against the ground truth: full runs in fresh processes (the clocks the
harness uses too, never the harness itself), the one record of a projection against measured
runs, the measured speedup of two configurations, error against k, the reduction factor."""

from seqpoint.validation._compare import (
    Drift,
    ErrorCurve,
    MeasuredSpeedup,
    TruthComparison,
    error_vs_k,
)
from seqpoint.validation._ddp import DDPRun, check_ddp_device, run_ddp
from seqpoint.validation._full_run import FullRun, run_full_fresh
from seqpoint.validation._saving import (
    ProfilingSaving,
    break_even,
    profiling_saving,
    reduction_factor,
)

__all__ = ["DDPRun", "Drift", "ErrorCurve", "FullRun", "MeasuredSpeedup", "ProfilingSaving", "TruthComparison",
           "break_even", "check_ddp_device", "error_vs_k", "profiling_saving", "reduction_factor", "run_ddp",
           "run_full_fresh"]
