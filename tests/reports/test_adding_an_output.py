"""How a newcomer adds an output (docs/architecture.md, "Adding to seqpoint"): a function in
reports over the typed results (here a Projection and its SeqPoints) that builds rows of strings and
hands them to ``render`` (a rich table) or to ``Section`` (an HTML page); formatting goes through
``fmt_*``. In seqpoint it is exported from reports/__init__.py and called by the workflow or the CLI
command that shows it."""

from __future__ import annotations

from rich.console import Console

from seqpoint.measurements import Measurements
from seqpoint.projection import Projection, project
from seqpoint.reports import fmt_duration, fmt_pct, render
from seqpoint.selection import SeqPoints
from seqpoint.testing import toy_measurements, toy_points, toy_schedule


def print_point_shares(console: Console, projection: Projection, seqpoints: SeqPoints,
                       measurements: Measurements) -> None:
    """Each SeqPoint's share of the projected run: its weight × its step time over the total."""
    times = {m.iteration: m.metrics["time_s"] for m in measurements.measurements}
    total = projection.totals["time_s"]
    rows = [["iteration", "shape", "weight", "share"]] + [
        [str(p.iteration), f"{p.batch_size}×{p.seq_len}", f"{p.weight:g}", fmt_pct(p.weight * times[p.iteration] / total)]
        for p in seqpoints.points]
    console.print(render(rows, title=f"where {fmt_duration(total)} goes"))


def test_a_new_output_reads_typed_results_and_renders_rows() -> None:
    schedule = toy_schedule()  # seq_len 10 ×3, 20 ×2, 30, 100 ×2 at batch 1
    points = toy_points(schedule, [0, 6])  # weight 4 each
    measurements = toy_measurements(points)
    console = Console(record=True, width=80)
    print_point_shares(console, project(schedule, points, measurements), points, measurements)
    text = console.export_text()
    # step times 0.6 s and 1.5 s (0.5 + 0.01 × tokens), weight 4: 2.4 s and 6.0 s of 8.4 s
    assert "where 8.40 s goes" in text
    assert "+28.57%" in text and "+71.43%" in text
