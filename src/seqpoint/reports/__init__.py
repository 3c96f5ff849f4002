"""Stage 9: every terminal table, plot and HTML page, read from typed records of their own
(which the workflows' results extend) and protocols, never the workflows. The names imported
``as`` themselves are parts of the pages, for their tests."""

from seqpoint.reports._format import fmt_duration, fmt_pct
from seqpoint.reports._format import fmt_ratio as fmt_ratio
from seqpoint.reports._pages import write_run_report, write_validation_report
from seqpoint.reports._plots import plot_breakdown, plot_error_vs_k
from seqpoint.reports._plots import plot_cost_vs_length as plot_cost_vs_length
from seqpoint.reports._plots import plot_length_histogram as plot_length_histogram
from seqpoint.reports._summaries import (
    print_run,
    print_speedup,
    print_trace_validation,
    print_validation,
)
from seqpoint.reports._sweep import print_sweep, write_sweep_report
from seqpoint.reports._tables import render
from seqpoint.reports._terminal import (
    print_measurements,
    print_projection,
    print_schedule,
    print_selection,
)
from seqpoint.reports._views import (
    Baseline,
    ExactCheck,
    RunRecord,
    SteadyTruth,
    TraceRecord,
    ValidationRecord,
)

__all__ = ["Baseline", "ExactCheck", "RunRecord", "SteadyTruth", "TraceRecord", "ValidationRecord", "fmt_duration",
           "fmt_pct", "plot_breakdown", "plot_error_vs_k", "print_measurements", "print_projection", "print_run",
           "print_schedule", "print_selection", "print_speedup", "print_sweep", "print_trace_validation",
           "print_validation", "render", "write_run_report", "write_sweep_report", "write_validation_report"]
