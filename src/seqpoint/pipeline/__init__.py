"""Composition of the stages: run configs, ``run``, ``validate``, the demo, run folders."""

from seqpoint.measurements import environment_manifest
from seqpoint.pipeline._config import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    ReportSection,
    RunConfig,
    SelectionSection,
    ValidationSection,
    WorkloadSection,
    apply_overrides,
    load_config,
)
from seqpoint.pipeline._demo import demo_configs, run_demo
from seqpoint.pipeline._folder import RunFolder
from seqpoint.pipeline._run import RunResult, run
from seqpoint.pipeline._validate import ValidationResult, exact_costs, validate

__all__ = [
    "BatchingSection",
    "LengthsSection",
    "ProfileSection",
    "ReportSection",
    "RunConfig",
    "RunFolder",
    "RunResult",
    "SelectionSection",
    "ValidationResult",
    "ValidationSection",
    "WorkloadSection",
    "apply_overrides",
    "demo_configs",
    "environment_manifest",
    "exact_costs",
    "load_config",
    "run",
    "run_demo",
    "validate",
]
