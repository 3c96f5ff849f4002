"""Stage 5: profile training iterations. Importing this package does not import torch.

One point is measured by :func:`profile_point` (warm-up, timed repeats, counts, the
operation-category breakdown, peak memory); a campaign of SeqPoints by
:func:`profile_points` (cache first, process start-up on a campaign-sized decoy, one
measurement per signature; with ``ProfileConfig(processes=P)`` the repeats are spread
over P fresh worker processes, interleaved, with a drift check: :func:`profile_protocol`;
two campaigns' workers alternate under :func:`take_turns`). What a workload object has run in this process is its
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
from seqpoint.profiling._attention_flops import ATTENTION_KERNELS, flop_registry, has_flop_formula
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
from seqpoint.profiling._coverage import UncountedOperator, counting_coverage, uncounted_operators
from seqpoint.profiling._exact import ExactTotals, exact_signature_costs, exact_totals
from seqpoint.profiling._failures import is_oom
from seqpoint.profiling._gpus import GPU_SPECS, GPUSpec, gpu_spec, roofline_seconds
from seqpoint.profiling._point import kineto_trace_path, profile_point
from seqpoint.profiling._point_shape import lengths_key, point_shape
from seqpoint.profiling._probe import cpu_roofline
from seqpoint.profiling._protocol import (
    DriftWarning,
    WorkerPoint,
    WorkerTask,
    measure_protocol,
    profile_protocol,
    run_worker,
    split_repeats,
)
from seqpoint.profiling._shipping import ShippedWorkload, ship_workload
from seqpoint.profiling._startup import (
    ONEDNN_DEFAULT_CACHE_CAPACITY,
    StartupState,
    campaign_decoy,
    mark_seen,
    onednn_cache_capacity,
    startup_state,
)
from seqpoint.profiling._timers import TIMERS, Timer
from seqpoint.profiling._turns import EndTurn, take_turns
from seqpoint.profiling._window import profile_window, time_window

__all__ = [
    "ATTENTION_KERNELS",
    "CATEGORIES",
    "GPU_SPECS",
    "HARNESS_VERSION",
    "METRICS",
    "ONEDNN_DEFAULT_CACHE_CAPACITY",
    "TIMERS",
    "Cost",
    "DriftWarning",
    "EndTurn",
    "ExactTotals",
    "GPUSpec",
    "Measurement",
    "Measurements",
    "PointLike",
    "PointSteps",
    "Points",
    "ProfileConfig",
    "ShippedWorkload",
    "StartupState",
    "Status",
    "Timer",
    "UncountedOperator",
    "WorkerPoint",
    "WorkerTask",
    "breakdown_shares",
    "campaign_decoy",
    "canonical_op_name",
    "categorize",
    "count_point",
    "count_step",
    "counting_coverage",
    "cpu_roofline",
    "environment_fingerprint",
    "exact_signature_costs",
    "exact_totals",
    "flop_registry",
    "gpu_spec",
    "has_flop_formula",
    "is_oom",
    "key_environment",
    "kineto_trace_path",
    "lengths_key",
    "mark_seen",
    "measure_protocol",
    "onednn_cache_capacity",
    "point_shape",
    "profile_point",
    "profile_points",
    "profile_protocol",
    "profile_window",
    "read_measurements",
    "roofline_seconds",
    "run_worker",
    "ship_workload",
    "split_repeats",
    "startup_state",
    "take_turns",
    "time_window",
    "uncounted_operators",
    "workload_code_hash",
    "write_measurements",
]
