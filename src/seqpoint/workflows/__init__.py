"""The one orchestration layer: run configs, ``run``, ``validate``, ``speedup``, the demo.

It composes the stages once (lengths → schedule → workload and cache → SeqPoints →
measurements, in a run folder), then projects, validates or compares, and writes the
report through ``reports``; only ``cli`` and ``integrations`` sit above it
(docs/architecture.md).

Names imported here but not in ``__all__`` are internal helpers the tests and benchmarks
reach (``with_window``, ``model_cost``, ``sweep_from_dict``, ...), not a promised API.
"""

from seqpoint.workflows._campaign import profiled_device as profiled_device
from seqpoint.workflows._campaign import with_window as with_window
from seqpoint.workflows._config import RunConfig, apply_overrides, load_config
from seqpoint.workflows._config import parse_set as parse_set  # the --set grammar, for tests
from seqpoint.workflows._ddp import ddp_schedule as ddp_schedule
from seqpoint.workflows._ddp import validate_ddp
from seqpoint.workflows._demo import demo_configs as demo_configs
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._job import JobProjection as JobProjection
from seqpoint.workflows._job import project_job
from seqpoint.workflows._run import RunResult, run
from seqpoint.workflows._run import log_to_mlflow as log_to_mlflow
from seqpoint.workflows._run import mlflow_metrics as mlflow_metrics
from seqpoint.workflows._run import mlflow_params as mlflow_params
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
from seqpoint.workflows._speedup import speedup_between as speedup_between
from seqpoint.workflows._speedup import speedup_configs as speedup_configs
from seqpoint.workflows._stages import build_schedule, choose_points, load_lengths, make_workload
from seqpoint.workflows._stages import model_cost as model_cost
from seqpoint.workflows._stages import signature_shapes as signature_shapes
from seqpoint.workflows._stages import validation_schedule as validation_schedule
from seqpoint.workflows._sweep import run_sweep, sweep
from seqpoint.workflows._sweep_config import load_sweep
from seqpoint.workflows._sweep_config import sweep_from_dict as sweep_from_dict
from seqpoint.workflows._trace import check_traces
from seqpoint.workflows._trace import speedup_from_files as speedup_from_files
from seqpoint.workflows._trace import validate_trace as validate_trace
from seqpoint.workflows._validate import interleave_plan as interleave_plan
from seqpoint.workflows._validate import progress_bar as progress_bar
from seqpoint.workflows._validate import validate

__all__ = [
    "BatchingSection",
    "LengthsSection",
    "ProfileSection",
    "ProjectionSection",
    "ReportSection",
    "RunConfig",
    "RunFolder",
    "RunResult",
    "SelectionSection",
    "ValidationSection",
    "WorkloadSection",
    "apply_overrides",
    "build_schedule",
    "check_traces",
    "choose_points",
    "load_config",
    "load_lengths",
    "load_sweep",
    "make_workload",
    "project_job",
    "run",
    "run_sweep",
    "sweep",
    "validate",
    "validate_ddp",
]
