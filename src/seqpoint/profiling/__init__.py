"""Stage 5: profile training iterations. Importing this package does not import torch.

A :class:`Profiler` measures the points of one workload (warm-up, timed repeats, counts, the
operation-category breakdown, peak memory): the cache first, one measurement per signature;
with ``ProfileConfig(processes=P)`` the repeats are spread over P fresh worker processes
with a drift check, and two campaigns' workers alternate under :func:`take_turns`.
:func:`profile_points` is one call of it, ``Profiler.point`` one point in this process.
Counted metrics (FLOPs, bytes) come from :func:`count_point` and, for a whole schedule,
:func:`exact_totals`. Every executor runs a profiler's :class:`Plan` (what is cached, what is
left, one :class:`CampaignKey`). :func:`kineto_breakdown` reads a user's own Kineto trace
(torch-free) and gives its device time by operation category, as the breakdown of a CUDA point does.

The names imported ``as`` themselves are the harness's parts, for its tests.
"""

from seqpoint.profiling._breakdown import KinetoBreakdown, kineto_breakdown
from seqpoint.profiling._campaign import Profiler, profile_points
from seqpoint.profiling._categories import canonical_op_name as canonical_op_name
from seqpoint.profiling._categories import categorize as categorize
from seqpoint.profiling._categories import kernel_category as kernel_category
from seqpoint.profiling._config import STARTUP_STEPS as STARTUP_STEPS
from seqpoint.profiling._config import ProfileConfig
from seqpoint.profiling._counter import flop_registry as flop_registry
from seqpoint.profiling._counting import category_models, count_point, device_targets
from seqpoint.profiling._counting import count_step as count_step
from seqpoint.profiling._coverage import counting_coverage
from seqpoint.profiling._coverage import uncounted_operators as uncounted_operators
from seqpoint.profiling._exact import exact_signature_costs, exact_totals
from seqpoint.profiling._plan import CampaignKey, Pending, Plan
from seqpoint.profiling._protocol import DriftWarning, ShippedWorkload
from seqpoint.profiling._protocol import WorkerResult as WorkerResult
from seqpoint.profiling._protocol import WorkerTask as WorkerTask
from seqpoint.profiling._protocol import profile_protocol as profile_protocol
from seqpoint.profiling._protocol import run_worker as run_worker
from seqpoint.profiling._protocol import split_repeats as split_repeats
from seqpoint.profiling._startup import DEFAULT_BLOCK as DEFAULT_BLOCK
from seqpoint.profiling._startup import campaign_decoy as campaign_decoy
from seqpoint.profiling._startup import interleave_block as interleave_block
from seqpoint.profiling._startup import startup_state as startup_state
from seqpoint.profiling._state import WorkloadState
from seqpoint.profiling._turns import EndTurn, take_turns

__all__ = ["CampaignKey", "DriftWarning", "EndTurn", "KinetoBreakdown", "Pending", "Plan", "ProfileConfig", "Profiler",
           "ShippedWorkload", "WorkloadState", "category_models", "count_point", "counting_coverage", "device_targets",
           "exact_signature_costs", "exact_totals", "kineto_breakdown", "profile_points", "take_turns"]
