"""The torch-free data layer: measurement records, metric names, the environment fingerprint.
``profiling`` writes these records; ``cache``, ``projection``, ``workflows`` and ``reports`` read
them. The names imported ``as`` themselves are for the tests."""

from seqpoint._signature import SIGNATURE_FIELDS as SIGNATURE_FIELDS
from seqpoint._signature import SignatureFields as SignatureFields
from seqpoint._signature import make_signature as make_signature
from seqpoint._signature import signature_fields as signature_fields
from seqpoint.measurements._environment import CPU_ISA as CPU_ISA
from seqpoint.measurements._environment import environment_fingerprint, environment_manifest
from seqpoint.measurements._io import parse_measurement, read_measurements, write_measurements
from seqpoint.measurements._process import ProcessState
from seqpoint.measurements._records import Measurement, Measurements, Status, StepWindow
from seqpoint.measurements.metrics import CATEGORIES, STEADY_TIME, per_process_key, standard_error

__all__ = ["CATEGORIES", "STEADY_TIME", "Measurement", "Measurements", "ProcessState", "Status",
           "StepWindow", "environment_fingerprint", "environment_manifest", "parse_measurement", "per_process_key",
           "read_measurements", "standard_error", "write_measurements"]
