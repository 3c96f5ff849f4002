"""Stage 5: profile training iterations. Importing this package does not import torch.

The records it writes (``Measurement``, ``Measurements``) live in the torch-free
:mod:`seqpoint.measurements` and are re-exported here for convenience.
"""

from seqpoint.measurements import (
    CATEGORIES,
    Measurement,
    Measurements,
    Status,
    environment_fingerprint,
    read_measurements,
    write_measurements,
)
from seqpoint.profiling._categories import (
    breakdown_shares,
    canonical_op_name,
    categorize,
)
from seqpoint.profiling._counting import Cost, count_point, count_step
from seqpoint.profiling._gpus import GPU_SPECS, GPUSpec, gpu_spec, roofline_seconds
from seqpoint.profiling._harness import (
    METRICS,
    ProfileConfig,
    is_oom,
    profile_point,
    profile_points,
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
