"""The one orchestration layer: run configs, the :class:`Campaign` every entry point builds,
``run``, ``validate``, ``speedup``, ``sweep``, ``project_job``.

It composes the stages once (lengths → schedule → workload and cache → SeqPoints →
measurements, in a run folder), then projects, validates or compares, and writes the
report through ``reports``; only ``cli`` and ``integrations`` sit above it
(docs/architecture.md). The names imported ``as`` themselves are for the tests.
"""

from seqpoint.workflows._campaign import Campaign
from seqpoint.workflows._config import RunConfig, apply_overrides, load_config
from seqpoint.workflows._config import parse_set as parse_set
from seqpoint.workflows._ddp import ddp_schedule as ddp_schedule
from seqpoint.workflows._ddp import validate_ddp
from seqpoint.workflows._demo import demo_configs
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._job import JobProjection, project_job
from seqpoint.workflows._run import run
from seqpoint.workflows._sections import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    ProjectionSection,
    ReportSection,
    SelectionSection,
    ValidationSection,
    WorkloadSection,
)
from seqpoint.workflows._speedup import speedup
from seqpoint.workflows._stages import build_schedule, choose_points
from seqpoint.workflows._stages import model_cost as model_cost
from seqpoint.workflows._stages import signature_shapes as signature_shapes
from seqpoint.workflows._sweep import sweep
from seqpoint.workflows._sweep_config import load_sweep
from seqpoint.workflows._sweep_config import sweep_from_dict as sweep_from_dict
from seqpoint.workflows._trace import speedup_from_files, validate_trace
from seqpoint.workflows._validate import interleave_plan as interleave_plan
from seqpoint.workflows._validate import validate

__all__ = [
    "BatchingSection",
    "Campaign",
    "JobProjection",
    "LengthsSection",
    "ProfileSection",
    "ProjectionSection",
    "ReportSection",
    "RunConfig",
    "RunFolder",
    "SelectionSection",
    "ValidationSection",
    "WorkloadSection",
    "apply_overrides",
    "build_schedule",
    "choose_points",
    "demo_configs",
    "load_config",
    "load_sweep",
    "project_job",
    "run",
    "speedup",
    "speedup_from_files",
    "sweep",
    "validate",
    "validate_ddp",
    "validate_trace",
]
