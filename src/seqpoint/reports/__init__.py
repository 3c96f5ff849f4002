"""Stage 9: reports — terminal tables, PNG plots and a self-contained HTML page.

Every table, plot and page of seqpoint is written here. Reports read stage results
(schedules, SeqPoints, measurements, projections, full runs) and the typed records of
:mod:`._views`; they never import the workflows or the command line, which call them.
The names imported ``as`` themselves are for the tests; they are not in ``__all__``.
"""

from seqpoint.reports._format import fmt_duration as fmt_duration
from seqpoint.reports._format import fmt_pct as fmt_pct
from seqpoint.reports._format import fmt_ratio as fmt_ratio
from seqpoint.reports._html import Section, write_html_report
from seqpoint.reports._plots import plot_breakdown, plot_error_vs_k
from seqpoint.reports._plots import plot_cost_vs_length as plot_cost_vs_length
from seqpoint.reports._plots import plot_length_histogram as plot_length_histogram
from seqpoint.reports._ranks import ddp_validation_table, rank_projection_table
from seqpoint.reports._summaries import print_run as print_run
from seqpoint.reports._sweep import plot_sweep
from seqpoint.reports._tables import render
from seqpoint.reports._views import RunRecord as RunRecord

__all__ = ["Section", "ddp_validation_table", "plot_breakdown", "plot_error_vs_k", "plot_sweep",
           "rank_projection_table", "render", "write_html_report"]
