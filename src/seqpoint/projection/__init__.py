"""Stage 7: project whole-run totals, speedups and their error from SeqPoint measurements."""

from seqpoint.projection._errors import geomean_abs_error, relative_error
from seqpoint.projection._match import match_measurements, seqpoint_rows
from seqpoint.projection._project import (
    METHODS,
    Projection,
    cold_steps,
    fitted_costs,
    project,
    project_cost,
)
from seqpoint.projection._speedup import Speedup, project_speedup

__all__ = [
    "METHODS",
    "Projection",
    "Speedup",
    "cold_steps",
    "fitted_costs",
    "geomean_abs_error",
    "match_measurements",
    "project",
    "project_cost",
    "project_speedup",
    "relative_error",
    "seqpoint_rows",
]
