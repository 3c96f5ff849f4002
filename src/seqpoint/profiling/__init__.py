"""Stage 5: profile training iterations. Importing this package does not import torch.

One point is measured by :func:`profile_point` (warm-up, timed repeats, counts, the
operation-category breakdown, peak memory); a campaign of SeqPoints by
:func:`profile_points` (cache first, process start-up on a campaign-sized decoy, one
measurement per signature). What a workload object has run in this process is its
:class:`StartupState`, stored on the object itself.

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
from seqpoint.profiling._campaign import (
    PointLike,
    Points,
    key_environment,
    profile_points,
    workload_code_hash,
)
from seqpoint.profiling._categories import (
    breakdown_shares,
    canonical_op_name,
    categorize,
)
from seqpoint.profiling._config import HARNESS_VERSION, METRICS, PointSteps, ProfileConfig
from seqpoint.profiling._counting import Cost, count_point, count_step
from seqpoint.profiling._failures import is_oom
from seqpoint.profiling._gpus import GPU_SPECS, GPUSpec, gpu_spec, roofline_seconds
from seqpoint.profiling._point import kineto_trace_path, profile_point
from seqpoint.profiling._point_shape import lengths_key, point_shape
from seqpoint.profiling._rng import torch_rng_kept
from seqpoint.profiling._startup import (
    ONEDNN_DEFAULT_CACHE_CAPACITY,
    StartupState,
    campaign_decoy,
    mark_seen,
    onednn_cache_capacity,
    startup_state,
)
from seqpoint.profiling._timers import TIMERS, Timer

__all__ = [
    "CATEGORIES",
    "GPU_SPECS",
    "HARNESS_VERSION",
    "METRICS",
    "ONEDNN_DEFAULT_CACHE_CAPACITY",
    "TIMERS",
    "Cost",
    "GPUSpec",
    "Measurement",
    "Measurements",
    "PointLike",
    "PointSteps",
    "Points",
    "ProfileConfig",
    "StartupState",
    "Status",
    "Timer",
    "breakdown_shares",
    "campaign_decoy",
    "canonical_op_name",
    "categorize",
    "count_point",
    "count_step",
    "environment_fingerprint",
    "gpu_spec",
    "is_oom",
    "key_environment",
    "kineto_trace_path",
    "lengths_key",
    "mark_seen",
    "onednn_cache_capacity",
    "point_shape",
    "profile_point",
    "profile_points",
    "read_measurements",
    "roofline_seconds",
    "startup_state",
    "torch_rng_kept",
    "workload_code_hash",
    "write_measurements",
]
