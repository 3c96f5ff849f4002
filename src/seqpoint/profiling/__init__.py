"""Stage 5: profile training iterations. Importing this package does not import torch.

One point is measured by :func:`profile_point` (warm-up, timed repeats, counts, the
operation-category breakdown, peak memory); a campaign of SeqPoints by
:func:`profile_points` (cache first, one measurement per signature; with
``ProfileConfig(processes=P)`` the repeats are spread over P fresh worker processes with
a drift check, and two campaigns' workers alternate under :func:`take_turns`). Counted
metrics (FLOPs, bytes) come from :func:`count_point` and, for a whole schedule,
:func:`exact_totals`.

Every executor runs the campaign engine of ``_plan`` and ``_campaign``; every timing goes
through :data:`TIMERS` (:func:`step_timer` for a step) and every fresh process through
:func:`in_fresh_process`. The names imported ``as`` themselves are for the tests.
"""

from seqpoint.profiling._attention_flops import flop_registry as flop_registry
from seqpoint.profiling._callgrind import read_summary as read_summary
from seqpoint.profiling._campaign import profile_points
from seqpoint.profiling._categories import canonical_op_name as canonical_op_name
from seqpoint.profiling._categories import categorize as categorize
from seqpoint.profiling._config import STARTUP_STEPS as STARTUP_STEPS
from seqpoint.profiling._config import ProfileConfig
from seqpoint.profiling._counting import count_point, device_targets
from seqpoint.profiling._counting import count_step as count_step
from seqpoint.profiling._coverage import counting_coverage
from seqpoint.profiling._coverage import uncounted_operators as uncounted_operators
from seqpoint.profiling._exact import exact_signature_costs, exact_totals
from seqpoint.profiling._fresh import in_fresh_process, stop_workers
from seqpoint.profiling._point import profile_point
from seqpoint.profiling._probe import cpu_roofline
from seqpoint.profiling._protocol import DriftWarning
from seqpoint.profiling._protocol import WorkerResult as WorkerResult
from seqpoint.profiling._protocol import WorkerTask as WorkerTask
from seqpoint.profiling._protocol import profile_protocol as profile_protocol
from seqpoint.profiling._protocol import run_worker as run_worker
from seqpoint.profiling._protocol import split_repeats as split_repeats
from seqpoint.profiling._retarget import category_models
from seqpoint.profiling._shipping import ShippedWorkload as ShippedWorkload
from seqpoint.profiling._shipping import ship_workload as ship_workload
from seqpoint.profiling._startup import DEFAULT_BLOCK as DEFAULT_BLOCK
from seqpoint.profiling._startup import campaign_decoy as campaign_decoy
from seqpoint.profiling._startup import interleave_block as interleave_block
from seqpoint.profiling._startup import startup_state as startup_state
from seqpoint.profiling._timers import TIMERS, step_timer
from seqpoint.profiling._turns import EndTurn, take_turns
from seqpoint.profiling._window import profile_window

__all__ = [
    "TIMERS",
    "DriftWarning",
    "EndTurn",
    "ProfileConfig",
    "category_models",
    "count_point",
    "counting_coverage",
    "cpu_roofline",
    "device_targets",
    "exact_signature_costs",
    "exact_totals",
    "in_fresh_process",
    "profile_point",
    "profile_points",
    "profile_window",
    "step_timer",
    "stop_workers",
    "take_turns",
]
