"""Stage 5: profile training iterations. Importing this package does not import torch."""

from seqpoint.profiling._measurements import (
    Measurement,
    Measurements,
    Status,
    read_measurements,
    write_measurements,
)

__all__ = ["Measurement", "Measurements", "Status", "read_measurements", "write_measurements"]
