"""Stage 9: reports — terminal tables, PNG plots and a self-contained HTML page."""

from seqpoint.reports._format import fmt_count, fmt_duration, fmt_pct, fmt_ratio
from seqpoint.reports._html import Section, write_html_report
from seqpoint.reports._plots import (
    plot_breakdown,
    plot_cost_vs_length,
    plot_error_vs_k,
    plot_length_histogram,
)

__all__ = [
    "Section",
    "fmt_count",
    "fmt_duration",
    "fmt_pct",
    "fmt_ratio",
    "plot_breakdown",
    "plot_cost_vs_length",
    "plot_error_vs_k",
    "plot_length_histogram",
    "write_html_report",
]
