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

from seqpoint.workflows._config import RunConfig, apply_overrides, load_config
from seqpoint.workflows._ddp import validate_ddp
from seqpoint.workflows._demo import demo_configs
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._job import project_job
from seqpoint.workflows._outcome_sections import ReportSection, ValidationSection
from seqpoint.workflows._run import RunResult, run
from seqpoint.workflows._sections import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    SelectionSection,
    WorkloadSection,
)
from seqpoint.workflows._stages import (
    build_schedule,
    choose_points,
    load_lengths,
    make_workload,
    validation_schedule,
)
from seqpoint.workflows._sweep import run_sweep, sweep
from seqpoint.workflows._sweep_config import load_sweep
from seqpoint.workflows._validate import validate

__all__ = [
    "BatchingSection",
    "LengthsSection",
    "ProfileSection",
    "ReportSection",
    "RunConfig",
    "RunFolder",
    "RunResult",
    "SelectionSection",
    "ValidationSection",
    "WorkloadSection",
    "apply_overrides",
    "build_schedule",
    "choose_points",
    "demo_configs",
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
    "validation_schedule",
]
