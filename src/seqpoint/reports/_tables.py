"""The tables of a report as plain rows (a header row, then formatted cells), so the terminal
(:func:`render`) and the HTML page show the same ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.table import Table

from seqpoint.measurements import STEADY_TIME, Measurements
from seqpoint.measurements.metrics import (
    BREAKDOWN_PREFIX,
    COLD_TIME,
    is_spread,
    steady_metric,
    unit_of,
)
from seqpoint.projection import Projection
from seqpoint.reports._format import fmt_count, fmt_duration, fmt_pct
from seqpoint.reports._views import ValidationRecord
from seqpoint.selection import SeqPoints

__all__ = ["Rows", "baselines_table", "breakdown_table", "cold_steps_text", "cold_term_sentence",
           "exact_table", "overhead_causes", "points_table", "projection_table", "render"]

Rows = list[list[str]]
Fmt = Callable[[float], str]

_NAN = float("nan")


def fmt_metric(metric: str) -> Fmt:
    """Human format of a metric's values, by the unit in its name (``7.29 M instr``)."""
    unit = unit_of(metric)
    if unit == "s":
        return fmt_duration
    if unit == "instr":
        return lambda v: f"{fmt_count(v)} {unit}"
    return lambda v: fmt_count(v) + unit


def render(rows: Sequence[Sequence[str]], *, title: str = "", left: int = 1) -> Table:
    """A rich table of ``rows`` (header first); the first ``left`` columns align left."""
    head, *body = rows
    table = Table(title=title or None)
    for i, col in enumerate(head):
        table.add_column(col, justify="left" if i < left else "right")
    for row in body:
        table.add_row(*row)
    return table


def points_table(points: SeqPoints, measurements: Measurements | None = None) -> Rows:
    """The chosen points, their weights and (when measured) their time (or instructions) per step."""
    ms = {m.signature: m for m in measurements.measurements} if measurements is not None else {}
    step = steady_metric(next((m.metrics for m in ms.values() if m.ok), {})) or STEADY_TIME
    fmt = fmt_metric(step)
    rows = [["iteration", "batch", "seq_len", "tgt_len", "weight", "share"]]
    if measurements is not None:
        rows[0].append("time/step" if step == STEADY_TIME else f"{unit_of(step)}/step")
    n = points.n_iterations
    for p in points.points:
        row = [f"{p.iteration:,}", str(p.batch_size), str(p.seq_len), str(p.tgt_len),
               f"{p.weight:g}", f"{p.weight / n:.1%}"]
        if measurements is not None:
            m = ms.get(p.signature)
            row.append(fmt(m.metrics[step]) if m and m.ok and step in m.metrics else (m.status if m else "-"))
        rows.append(row)
    return rows


def projection_table(projection: Projection, *, exact: bool = False) -> Rows:
    """Projected total and 95% interval of each metric: with ``exact`` every metric as plain
    numbers (``seqpoint project``), else the run totals in human units (no spreads or breakdown)."""
    rows = [["metric", "projected", "low (95%)", "high (95%)", "±"]]
    for metric, total in projection.totals.items():
        if not exact and (metric.startswith(BREAKDOWN_PREFIX) or is_spread(metric)):
            continue
        fmt = (lambda v: f"{v:.6g}") if exact else fmt_metric(metric)
        lo, hi = projection.interval.get(metric, (_NAN, _NAN))
        half = projection.relative_halfwidth(metric) if metric in projection.interval else _NAN
        rows.append([metric, fmt(total), fmt(lo), fmt(hi), f"{half:.2%}"])
    return rows


def baselines_table(result: ValidationRecord) -> Rows:
    """SeqPoints and every baseline against the measured full run (and the steady-state truth)."""
    steady = result.steady
    rows = [["method", "k", "projected", "error vs full run"]]
    if steady:
        # SeqPoint's "projected" is its whole run (cold steps included); this column is its
        # steady state alone, the part the truth (every signature in isolation) measures.
        rows[0].append("steady state vs its truth")
    fmt = fmt_metric(result.full.metric)  # seconds, or instructions counted under callgrind
    first = ["seqpoint", str(len(result.seqpoints)), fmt(result.truth.projected_s), fmt_pct(result.truth.error)]
    rows.append(first + ([fmt_pct(steady.selection_error)] if steady else []))
    for method, b in result.baselines.items():
        row = [method, str(b.k), fmt(b.projected_s), fmt_pct(b.error)]
        rows.append(row + ([fmt_pct(_NAN if b.selection_error is None else b.selection_error)] if steady else []))
    return rows


def exact_table(result: ValidationRecord) -> Rows:
    """Deterministic metrics (FLOPs, roofline time) against their exact totals."""
    rows = [["metric", "exact total", "projected", "error"]]
    for metric, e in result.exact.items():
        fmt = fmt_metric(metric)
        rows.append([metric, fmt(e.exact), fmt(e.projected), fmt_pct(e.error, 3)])
    return rows


def breakdown_table(breakdown: dict[str, float]) -> Rows:
    """Operation category, its projected seconds and its share, largest first."""
    total = sum(breakdown.values())
    rows = [["category", "time", "share"]]
    for cat, sec in sorted(breakdown.items(), key=lambda kv: -kv[1]):
        rows.append([cat, fmt_duration(sec), f"{sec / total:.1%}"])
    return rows


def cold_steps_text(projection: Projection) -> str:
    """What the first-occurrence term charged, in words."""
    cold = projection.cold_steps
    text = f"the cold first step of {cold.get('first', 0):,} shapes"
    if cold.get("evicted"):
        text += f" and {cold['evicted']:,} steps whose shape oneDNN's primitive cache had evicted"
    return text + ", at the SeqPoints' measured cold/steady ratio"


def overhead_causes(interleaved: int) -> str:
    """What the full run's excess over the steady-state truth is made of, in words."""
    when = ("between which they ran: that evens out a steady change but not the machine's "
            "noise" if interleaved else "which ran before them")
    return ("cold steps (first occurrences and shapes whose oneDNN primitives were evicted), "
            "which SeqPoint's projection charges; allocator growth and churn, which no method "
            "profiling iterations in isolation can see; and any change in the machine's speed "
            f"between the full runs and the worker processes that timed this truth, {when}")


def cold_term_sentence(projection: Projection) -> str:
    """The cold-step term of a projection, as a sentence (empty when it has none)."""
    if COLD_TIME not in projection.totals:
        return ""
    return (f" SeqPoint's projection includes {fmt_duration(projection.totals[COLD_TIME])} of cold "
            f"steps: {cold_steps_text(projection)}.")
