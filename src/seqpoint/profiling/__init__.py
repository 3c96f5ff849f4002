"""Stage 5: profile training iterations. Importing this package does not import torch."""

from seqpoint.profiling._categories import (
    CATEGORIES,
    breakdown_shares,
    canonical_op_name,
    categorize,
)
from seqpoint.profiling._counting import Cost, count_point, count_step
from seqpoint.profiling._gpus import GPU_SPECS, GPUSpec, gpu_spec, roofline_seconds
from seqpoint.profiling._harness import (
    METRICS,
    ProfileConfig,
    environment_fingerprint,
    is_oom,
    profile_point,
    profile_points,
)
from seqpoint.profiling._measurements import (
    Measurement,
    Measurements,
    Status,
    read_measurements,
    write_measurements,
)
from seqpoint.profiling._timers import TIMERS, Timer

__all__ = [
    "CATEGORIES",
    "GPU_SPECS",
    "METRICS",
    "TIMERS",
    "Cost",
    "GPUSpec",
    "Measurement",
    "Measurements",
    "ProfileConfig",
    "Status",
    "Timer",
    "breakdown_shares",
    "canonical_op_name",
    "categorize",
    "count_point",
    "count_step",
    "environment_fingerprint",
    "gpu_spec",
    "is_oom",
    "profile_point",
    "profile_points",
    "read_measurements",
    "roofline_seconds",
    "write_measurements",
]
