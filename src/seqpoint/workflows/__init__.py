"""The one orchestration layer: run configs, ``run``, ``validate``, ``speedup``, the demo.

Layering (imports point down only; nothing imports a layer above it)::

    cli/            parses flags, calls workflows and reports, prints
      │
    workflows/      composes the stages once (start_campaign = plan_campaign: lengths →
      │             schedule → workload and cache → SeqPoints, then CampaignPlan.measure:
      │             measurements, in a run folder),
      │             then projects, validates or compares; writes the run folder's
      │             report by calling reports
      │
    reports/        every table, plot and HTML page; reads stage results through
      │             small views it owns (RunView, ValidationView), never workflows
      │
    stages          traces, batching, schedule, selection, profiling, workloads, cache,
                    projection, validation, measurements

``RunResult`` and ``ValidationResult`` satisfy the reports' views structurally, so
the workflows can write their own reports without reports knowing them.
"""

from seqpoint.measurements import environment_manifest
from seqpoint.workflows._campaign import (
    Campaign,
    CampaignPlan,
    plan_campaign,
    start_campaign,
    with_window,
)
from seqpoint.workflows._config import RunConfig, apply_overrides, load_config
from seqpoint.workflows._ddp import DDPValidation, ddp_schedule, validate_ddp
from seqpoint.workflows._demo import demo_configs, run_demo
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._job import JobProjection, project_job
from seqpoint.workflows._mlflow import log_to_mlflow, mlflow_metrics, mlflow_params
from seqpoint.workflows._run import RunResult, run
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
from seqpoint.workflows._speedup import SpeedupResult, speedup_between, speedup_configs
from seqpoint.workflows._stages import (
    build_schedule,
    choose_points,
    load_lengths,
    make_workload,
    measure,
    open_cache,
    validation_schedule,
)
from seqpoint.workflows._sweep import (
    EXECUTORS,
    ConfigResult,
    SweepResult,
    make_executor,
    run_sweep,
    sweep,
)
from seqpoint.workflows._sweep_config import SweepConfig, SweepEntry, load_sweep, sweep_from_dict
from seqpoint.workflows._trace import (
    TraceValidation,
    speedup_from_files,
    validate_config_on_traces,
    validate_trace,
)
from seqpoint.workflows._validate import EXACT_METRICS, ValidationResult, exact_costs, validate

__all__ = [
    "EXACT_METRICS",
    "EXECUTORS",
    "BatchingSection",
    "Campaign",
    "CampaignPlan",
    "ConfigResult",
    "DDPValidation",
    "JobProjection",
    "LengthsSection",
    "ProfileSection",
    "ProjectionSection",
    "ReportSection",
    "RunConfig",
    "RunFolder",
    "RunResult",
    "SelectionSection",
    "SpeedupResult",
    "SweepConfig",
    "SweepEntry",
    "SweepResult",
    "TraceValidation",
    "ValidationResult",
    "ValidationSection",
    "WorkloadSection",
    "apply_overrides",
    "build_schedule",
    "choose_points",
    "ddp_schedule",
    "demo_configs",
    "environment_manifest",
    "exact_costs",
    "load_config",
    "load_lengths",
    "load_sweep",
    "log_to_mlflow",
    "make_executor",
    "make_workload",
    "measure",
    "mlflow_metrics",
    "mlflow_params",
    "open_cache",
    "plan_campaign",
    "project_job",
    "run",
    "run_demo",
    "run_sweep",
    "speedup_between",
    "speedup_configs",
    "speedup_from_files",
    "start_campaign",
    "sweep",
    "sweep_from_dict",
    "validate",
    "validate_config_on_traces",
    "validate_ddp",
    "validate_trace",
    "validation_schedule",
    "with_window",
]
