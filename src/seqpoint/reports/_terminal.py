"""Terminal tables of the stage commands (``schedule``, ``select``, ``profile``, ``project``),
and the length histogram, SeqPoints and data-parallel tables that ``run`` and ``validate`` show."""

from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.table import Table

from seqpoint.measurements import STEADY_TIME, Measurements
from seqpoint.measurements.metrics import steady_metric
from seqpoint.projection import Projection, RankProjection
from seqpoint.reports._format import fmt_count, fmt_duration
from seqpoint.reports._tables import fmt_metric, points_table, projection_table, render
from seqpoint.schedule import IterationSchedule, ScheduleSummary
from seqpoint.selection import SeqPoints

__all__ = ["print_histogram", "print_measurements", "print_projection", "print_ranks", "print_schedule",
           "print_selection", "print_seqpoints"]

_BAR = "█"

# What each selector's ``estimated_error`` is, so the figure is not read as more than it is.
_ESTIMATE_KIND = {
    "seqpoint": "count-weight basis bound, an upper-bound-style estimate",
    "stratified": "95% half-width of the cost proxy's total under the sampling design",
}


def print_schedule(console: Console, schedule: IterationSchedule, summary: ScheduleSummary, *, title: str,
                   show_tgt: bool = False) -> None:
    """Summary of a replayed schedule and its seq_len histogram (``seqpoint schedule``)."""
    s = summary
    rows = [["quantity", "value"], ["iterations", f"{s.n_iterations:,}"], ["epochs", str(s.n_epochs)],
            ["unique signatures", f"{s.n_unique_signatures:,}"], ["padding ratio", f"{s.padding_ratio:.2%}"],
            ["seq_len min / mean / max", f"{s.seq_len_min} / {s.seq_len_mean:.1f} / {s.seq_len_max}"],
            ["batch size min / max", f"{s.batch_size_min} / {s.batch_size_max}"]]
    if show_tgt:
        rows.append(["tgt_len min / max", f"{int(schedule.tgt_len.min())} / {int(schedule.tgt_len.max())}"])
    rows.append(["samples dropped", f"{schedule.meta.get('dropped', 0):,}"])
    console.print(render(rows, title=title))

    hist = Table(title="seq_len histogram (iterations)", show_header=True)
    for col in ("seq_len", "iterations", ""):
        hist.add_column(col, justify="left" if not col else "right")
    top = max(s.hist_counts) if s.hist_counts else 0
    for lo, hi, count in zip(s.hist_edges[:-1], s.hist_edges[1:], s.hist_counts, strict=True):
        bar = _BAR * (round(30 * count / top) if top else 0)
        hist.add_row(f"{lo:.0f}–{hi:.0f}", f"{count:,}", bar)
    console.print(hist)


def print_histogram(console: Console, schedule: IterationSchedule, points: SeqPoints | None = None, *,
                    unit: str = "tokens", bins: int = 16, width: int = 44) -> None:
    """Text histogram of padded seq_len, with the SeqPoints that fall in each bin."""
    counts, edges = np.histogram(schedule.seq_len, bins=bins)
    marks = np.zeros(bins, dtype=int)
    if points is not None:
        idx = np.clip(np.searchsorted(edges, [p.seq_len for p in points.points], side="right") - 1, 0, bins - 1)
        np.add.at(marks, idx, 1)
    top = max(int(counts.max()), 1)
    table = Table(title=f"Sequence length ({unit}) of {len(schedule):,} iterations", box=None,
                  show_header=True, header_style="bold")
    for col in ("seq_len", "iterations", "", "SeqPoints"):
        table.add_column(col, justify="right" if col in ("seq_len", "iterations") else "left")
    for i in range(bins):
        bar = _BAR * max(round(counts[i] / top * width), 1 if counts[i] else 0)
        table.add_row(f"{edges[i]:.0f}–{edges[i + 1]:.0f}", f"{counts[i]:,}", f"[cyan]{bar}[/]",
                      "[bold red]" + "◆" * int(marks[i]) + "[/]")
    console.print(table)


def print_seqpoints(console: Console, points: SeqPoints, measurements: Measurements | None = None) -> None:
    """Table of the chosen points (with their measured time when given)."""
    title = f"{len(points)} SeqPoints ({points.method}) for {points.n_iterations:,} iterations"
    table = render(points_table(points, measurements), title=title, left=0)
    if isinstance(cost := points.meta.get("params", {}).get("cost"), str):
        table.caption = f"grouped on the cost proxy {cost}"
    console.print(table)


def print_selection(console: Console, points: SeqPoints, *, method: str) -> None:
    """The points ``seqpoint select`` chose, and what its error estimate means."""
    title = f"{len(points)} {method} points for {points.n_iterations} iterations"
    console.print(render(points_table(points), title=title, left=0))
    est = points.meta.get("estimated_error")
    if est is not None:
        what = _ESTIMATE_KIND.get(method, f"the {method} selector's own estimate")
        console.print(f"estimated error: <= {est:.3%} ({what})")
    cal = points.meta.get("calibrated_error")
    if cal is not None and est is not None and cal < est:
        # Calibration zeroes the basis error by construction; it says nothing of real costs.
        console.print(f"calibrated weights reproduce the basis totals to {cal:.3%}; "
                      "a real cost's error is usually below the bound above, not 0")


def print_measurements(console: Console, points: SeqPoints, measurements: Measurements) -> None:
    """One row per profiled point: status, time, its spread and FLOPs (``seqpoint profile``)."""
    ms = measurements
    step = steady_metric(next((m.metrics for m in ms.measurements if m.ok), {})) or STEADY_TIME
    fmt = fmt_metric(step)
    table = Table(title=f"{ms.workload}: {len(ms.measurements)} points")
    for col in ("iteration", "batch", "seq_len", "tgt_len", "weight", "status",
                "time" if step == STEADY_TIME else "instructions", "± IQR", "FLOPs"):
        table.add_column(col, justify="right" if col != "status" else "left")
    for p, m in zip(points.points, ms.measurements, strict=True):
        time, iqr, flops = (m.metrics.get(k) for k in (step, f"{step}_iqr", "flops"))
        table.add_row(str(m.iteration), str(m.batch_size), str(m.seq_len), str(m.tgt_len), f"{p.weight:g}",
                      m.status if m.ok else f"{m.status}: {m.message[:60]}",
                      "-" if time is None else fmt(time), "-" if iqr is None else fmt(iqr),
                      "-" if flops is None else fmt_count(flops))
    console.print(table)


def print_projection(console: Console, projection: Projection, ranks: RankProjection | None = None) -> None:
    """Every projected metric with its 95% interval, as exact numbers, and a data-parallel run's
    time (``ranks``) split into its parts (``seqpoint project``)."""
    title = (f"{projection.method} projection over {projection.n_iterations} iterations from "
             f"{projection.n_points} points" + ("" if projection.complete else " (INCOMPLETE)"))
    console.print(render(projection_table(projection, exact=True), title=title))
    if ranks is not None:
        print_ranks(console, ranks)


def print_ranks(console: Console, proj: RankProjection) -> None:
    """A data-parallel run's time split into balanced compute, straggler wait and all-reduce."""
    total = proj.total_s
    rows = [["part", "time", "share"],
            ["balanced compute (mean over ranks)", fmt_duration(proj.mean_compute_s),
             f"{proj.mean_compute_s / total if total else 0.0:.1%}"],
            ["straggler wait (max - mean)", fmt_duration(proj.compute_s - proj.mean_compute_s),
             f"{proj.straggler_share:.1%}"],
            [f"all-reduce ({proj.allreduce_source}, {fmt_duration(proj.allreduce_s)}/step)",
             fmt_duration(proj.communication_s), f"{proj.communication_share:.1%}"],
            ["total", fmt_duration(total), f"{1.0:.1%}"]]
    console.print(render(rows, title=f"data-parallel run: {proj.world_size} ranks, {proj.n_steps:,} steps"))
