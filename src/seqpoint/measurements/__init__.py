"""The torch-free data layer: measurement records, metric names, the environment fingerprint.

``profiling`` writes these records; ``cache``, ``projection``, ``workflows`` and
``reports`` read them. Nothing here imports torch at import time.
"""

from seqpoint.measurements._environment import (
    environment_fingerprint,
    environment_manifest,
    workload_device_type,
)
from seqpoint.measurements._io import parse_measurement, read_measurements, write_measurements
from seqpoint.measurements._metrics import (
    BOOKKEEPING,
    BREAKDOWN_PREFIX,
    CATEGORIES,
    COLD_TIME,
    DERIVED,
    FIRST_STEP_TIME,
    ONEDNN_CACHE_CAPACITY,
    ONEDNN_NEW,
    ONEDNN_SHARED,
    PROCESSES,
    RUN_TIME,
    SPREAD_SUFFIXES,
    STEADY_TIME,
    breakdown_key,
    breakdown_of,
    is_peak,
    is_projectable,
    is_spread,
    per_process_key,
    projectable_values,
    shapes_held,
    spread_of,
    standard_error,
    time_metric,
    unit_of,
)
from seqpoint.measurements._records import Measurement, Measurements, Status, StepWindow

__all__ = [
    "BOOKKEEPING",
    "BREAKDOWN_PREFIX",
    "CATEGORIES",
    "COLD_TIME",
    "DERIVED",
    "FIRST_STEP_TIME",
    "ONEDNN_CACHE_CAPACITY",
    "ONEDNN_NEW",
    "ONEDNN_SHARED",
    "PROCESSES",
    "RUN_TIME",
    "SPREAD_SUFFIXES",
    "STEADY_TIME",
    "Measurement",
    "Measurements",
    "Status",
    "StepWindow",
    "breakdown_key",
    "breakdown_of",
    "environment_fingerprint",
    "environment_manifest",
    "is_peak",
    "is_projectable",
    "is_spread",
    "parse_measurement",
    "per_process_key",
    "projectable_values",
    "read_measurements",
    "shapes_held",
    "spread_of",
    "standard_error",
    "time_metric",
    "unit_of",
    "workload_device_type",
    "write_measurements",
]
