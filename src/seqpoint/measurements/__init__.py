"""The torch-free data layer: measurement records, metric names, the environment fingerprint.

``profiling`` writes these records; ``cache``, ``projection``, ``workflows`` and
``reports`` read them. Nothing here imports torch at import time.
"""

from seqpoint.measurements._environment import (
    CPU_ISA,
    environment_fingerprint,
    environment_manifest,
)
from seqpoint.measurements._io import parse_measurement, read_measurements, write_measurements
from seqpoint.measurements._metrics import (
    CATEGORIES,
    STEADY_TIME,
    per_process_key,
    standard_error,
)
from seqpoint.measurements._records import Measurement, Measurements, Status, StepWindow

__all__ = [
    "CATEGORIES",
    "CPU_ISA",
    "STEADY_TIME",
    "Measurement",
    "Measurements",
    "Status",
    "StepWindow",
    "environment_fingerprint",
    "environment_manifest",
    "parse_measurement",
    "per_process_key",
    "read_measurements",
    "standard_error",
    "write_measurements",
]
