"""Terminal presentation of runs and validations (rich tables)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from rich.console import Console
from rich.table import Table

from seqpoint.pipeline._report import breakdown_of, cold_steps_text
from seqpoint.pipeline._run import executed_steps, steps_per_point
from seqpoint.reports import fmt_count, fmt_duration, fmt_pct, fmt_ratio

if TYPE_CHECKING:
    from seqpoint.pipeline._run import RunResult
    from seqpoint.pipeline._validate import ValidationResult
    from seqpoint.schedule import IterationSchedule
    from seqpoint.selection import SeqPoints

__all__ = ["print_histogram", "print_run", "print_seqpoints", "print_validation"]

_BAR = "█"


def print_histogram(
    console: Console, schedule: IterationSchedule, points: SeqPoints | None = None, *,
    unit: str = "tokens", bins: int = 16, width: int = 44,
) -> None:
    """Text histogram of padded seq_len, with the SeqPoints that fall in each bin."""
    counts, edges = np.histogram(schedule.seq_len, bins=bins)
    marks = np.zeros(bins, dtype=int)
    if points is not None:
        idx = np.clip(np.searchsorted(edges, [p.seq_len for p in points.points], side="right") - 1,
                      0, bins - 1)
        np.add.at(marks, idx, 1)
    top = max(int(counts.max()), 1)
    table = Table(title=f"Sequence length ({unit}) of {len(schedule):,} iterations", box=None,
                  show_header=True, header_style="bold")
    table.add_column("seq_len", justify="right")
    table.add_column("iterations", justify="right")
    table.add_column("", justify="left")
    table.add_column("SeqPoints", justify="left")
    for i in range(bins):
        bar = _BAR * max(round(counts[i] / top * width), 1 if counts[i] else 0)
        table.add_row(f"{edges[i]:.0f}–{edges[i + 1]:.0f}", f"{counts[i]:,}", f"[cyan]{bar}[/]",
                      "[bold red]" + "◆" * int(marks[i]) + "[/]")
    console.print(table)


def print_seqpoints(console: Console, points: SeqPoints, measurements: Any = None) -> None:
    """Table of the chosen points (with their measured time when given)."""
    ms = {m.signature: m for m in measurements.measurements} if measurements is not None else {}
    table = Table(title=f"{len(points)} SeqPoints ({points.method}) for {points.n_iterations:,} iterations")
    for col in ("iteration", "batch", "seq_len", "tgt_len", "weight", "share"):
        table.add_column(col, justify="right")
    if ms:
        table.add_column("time/step", justify="right")
    for p in points.points:
        row = [f"{p.iteration:,}", str(p.batch_size), str(p.seq_len), str(p.tgt_len),
               f"{p.weight:g}", f"{p.weight / points.n_iterations:.1%}"]
        if ms:
            m = ms.get(p.signature)
            row.append(fmt_duration(m.metrics["time_s"]) if m and m.ok else (m.status if m else "-"))
        table.add_row(*row)
    console.print(table)


def print_run(console: Console, result: RunResult) -> None:
    """Headline of a run: projected time, its interval, breakdown, reduction factor."""
    proj = result.projection
    metric = "run_time_s" if "run_time_s" in proj.totals else "time_s"
    t = proj.totals[metric]
    lo, hi = proj.interval[metric]
    table = Table(title="Projected whole run", show_header=False)
    table.add_column(justify="left")
    table.add_column(justify="right")
    table.add_row("iterations", f"{len(result.schedule):,}")
    table.add_row("projected training time", f"[bold]{fmt_duration(t)}[/]")
    table.add_row("95% interval", f"{fmt_duration(lo)} … {fmt_duration(hi)}  "
                  f"(± {proj.relative_halfwidth(metric):.2%})")
    if "first_occurrence_s" in proj.totals:
        cold = proj.cold_steps
        label = f"  of which cold steps ({sum(cold.values()):,})" if cold else "  of which cold steps"
        table.add_row(label, fmt_duration(proj.totals["first_occurrence_s"]))
    if "flops" in proj.totals:
        table.add_row("projected FLOPs", fmt_count(proj.totals["flops"]) + "FLOP")
    warm, timed, profiled = steps_per_point(result.config)
    n = len(result.seqpoints)
    parts = f"{warm} warm-up + {timed} timed" + (f" + {profiled} profiled" if profiled else "")
    table.add_row("profiled steps", f"{executed_steps(n, result.config)} ({n} points × ({parts}))")
    table.add_row("less profiling", f"[bold]{fmt_ratio(result.reduction)}[/]")
    if not proj.complete:
        table.add_row("[red]incomplete[/]", f"points at iterations {list(proj.failed)} failed")
    console.print(table)
    bd = breakdown_of(proj.totals)
    if bd:
        total = sum(bd.values())
        bt = Table(title="Projected operation breakdown")
        bt.add_column("category")
        bt.add_column("time", justify="right")
        bt.add_column("share", justify="right")
        for cat, sec in sorted(bd.items(), key=lambda kv: -kv[1]):
            bt.add_row(cat, fmt_duration(sec), f"{sec / total:.1%}")
        console.print(bt)


def print_validation(console: Console, result: ValidationResult) -> None:
    """Projection and baselines against the measured full runs, beside the noise floor."""
    full = result.full
    table = Table(title=f"Validation on {len(result.schedule):,} iterations run in full ×{full.n_runs}")
    cols = ["method", "k", "projected", "error vs full run"]
    steady = result.steady
    if steady:
        cols.append("error vs steady-state truth")
    for col in cols:
        table.add_column(col, justify="right")
    row = ["[bold]seqpoint[/]", str(len(result.seqpoints)), fmt_duration(result.projected_s),
           f"[bold]{fmt_pct(result.error)}[/]"]
    if steady:
        row.append(f"[bold]{fmt_pct(steady['selection_error'])}[/]")
    table.add_row(*row)
    for m, b in result.baselines.items():
        row = [m, f"{int(b['k'])}", fmt_duration(b["projected_s"]), fmt_pct(b["error"])]
        if steady:
            row.append(fmt_pct(b.get("selection_error", float("nan"))))
        table.add_row(*row)
    console.print(table)
    console.print(f"measured full run (mean of {full.n_runs} fresh processes): "
                  f"[bold]{fmt_duration(result.measured_s)}[/]")
    totals = result.projection.totals
    if "first_occurrence_s" in totals:
        console.print(
            f"projected = steady state {fmt_duration(totals['time_s'])} + cold steps "
            f"{fmt_duration(totals['first_occurrence_s'])} ({cold_steps_text(result.projection)})."
        )
    if steady:
        console.print(
            f"steady-state truth (all {int(steady['n_signatures'])} signatures profiled in isolation): "
            f"{fmt_duration(steady['total_s'])}; the full run costs "
            f"[bold]{fmt_pct(steady['in_sequence_overhead'])}[/] more (in-sequence overhead: "
            "cold steps, which the projection models, and allocator growth and churn, which "
            "no method that profiles iterations in isolation sees)."
        )
    lo, hi = result.interval_s
    console.print(
        f"noise floor (identical full runs {', '.join(fmt_duration(x) for x in full.totals_s)}): "
        f"[bold]{fmt_pct(full.noise_floor).lstrip('+')}[/]; projection interval "
        f"{fmt_duration(lo)} … {fmt_duration(hi)} "
        f"{'contains' if result.within_interval else '[red]does not contain[/]'} the measured mean; "
        f"profiling reduction {fmt_ratio(result.reduction)}."
    )
    if result.exact:
        et = Table(title="Deterministic metrics against their exact totals")
        for col in ("metric", "exact", "projected", "error"):
            et.add_column(col, justify="right")
        for metric, e in result.exact.items():
            fmt = fmt_duration if metric.endswith("_s") else fmt_count
            et.add_row(metric, fmt(e["exact"]), fmt(e["projected"]), fmt_pct(e["error"], 3))
        console.print(et)
