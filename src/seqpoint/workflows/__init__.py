"""The one orchestration layer: run configs, ``run``, ``validate``, ``speedup``, the demo.

Layering (imports point down only)::

    cli/          parses flags, calls workflows and reports, prints
    workflows/    composes the stages once (lengths → schedule → workload and cache →
                  SeqPoints → measurements, in a run folder), then projects, validates or
                  compares, and writes the run folder's report by calling reports
    reports/      every table, plot and HTML page; reads results as typed records it
                  owns (RunRecord, ValidationRecord: RunResult and ValidationResult
                  extend them), never workflows
    stages        traces, batching, schedule, selection, profiling, workloads, cache,
                  projection, validation, measurements
"""

from seqpoint.workflows._campaign import with_window
from seqpoint.workflows._config import RunConfig, apply_overrides, load_config
from seqpoint.workflows._ddp import ddp_schedule, validate_ddp
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
from seqpoint.workflows._speedup import speedup_between, speedup_configs
from seqpoint.workflows._stages import (
    build_schedule,
    choose_points,
    load_lengths,
    make_workload,
    validation_schedule,
)
from seqpoint.workflows._sweep import run_sweep, sweep
from seqpoint.workflows._sweep_config import load_sweep, sweep_from_dict
from seqpoint.workflows._trace import (
    TraceValidation,
    speedup_from_files,
    validate_config_on_traces,
    validate_trace,
)
from seqpoint.workflows._validate import validate

__all__ = [
    "BatchingSection",
    "JobProjection",
    "LengthsSection",
    "ProfileSection",
    "ProjectionSection",
    "ReportSection",
    "RunConfig",
    "RunFolder",
    "RunResult",
    "SelectionSection",
    "TraceValidation",
    "ValidationSection",
    "WorkloadSection",
    "apply_overrides",
    "build_schedule",
    "choose_points",
    "ddp_schedule",
    "demo_configs",
    "load_config",
    "load_lengths",
    "load_sweep",
    "log_to_mlflow",
    "make_workload",
    "mlflow_metrics",
    "mlflow_params",
    "project_job",
    "run",
    "run_demo",
    "run_sweep",
    "speedup_between",
    "speedup_configs",
    "speedup_from_files",
    "sweep",
    "sweep_from_dict",
    "validate",
    "validate_config_on_traces",
    "validate_ddp",
    "validate_trace",
    "validation_schedule",
    "with_window",
]
