"""The speedup matrix of a sweep: terminal table, and the CSV, bar chart and HTML page of its run
folder, read through :class:`SweepView` (which the workflows' ``SweepResult`` satisfies)."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console
from rich.table import Table

from seqpoint.measurements.metrics import breakdown_of
from seqpoint.projection import Projection, Speedup
from seqpoint.reports._format import fmt_count, fmt_duration
from seqpoint.reports._html import Section, write_html_report
from seqpoint.reports._plots import _pyplot, _save
from seqpoint.reports._tables import fmt_metric
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints

__all__ = ["print_sweep", "write_sweep_report"]


class SweepConfigView(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def overrides(self) -> Mapping[str, Any]: ...
    @property
    def projection(self) -> Projection | None: ...
    @property
    def speedup(self) -> Speedup | None: ...
    @property
    def complete(self) -> bool: ...
    @property
    def n_failed(self) -> int: ...


class SweepView(Protocol):
    @property
    def configs(self) -> Sequence[SweepConfigView]: ...
    @property
    def time_metric(self) -> str | None: ...
    @property
    def schedule(self) -> IterationSchedule: ...
    @property
    def seqpoints(self) -> SeqPoints: ...
    @property
    def executor(self) -> str: ...
    @property
    def run_stats(self) -> dict[str, float]: ...


def _time(c: SweepConfigView, metric: str | None) -> tuple[float, float, float]:
    """Projected ``metric`` and its interval (NaN where there is none)."""
    p = c.projection
    if p is None or metric is None or metric not in p.totals:
        return math.nan, math.nan, math.nan
    lo, hi = p.interval[metric]
    return p.totals[metric], lo, hi


def _overrides_text(overrides: Mapping[str, Any]) -> str:
    """``key=value`` pairs in the ``--set`` grammar (values as TOML/JSON)."""
    return " ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, default=str)}"
                    for k, v in overrides.items()) or "(base)"


def _top_categories(p: Projection | None) -> str:
    bd = breakdown_of(p.totals) if p is not None else {}
    total = sum(bd.values())
    if not bd or total <= 0:
        return ""
    return ", ".join(f"{cat} {v / total:.0%}" for cat, v in sorted(bd.items(), key=lambda kv: -kv[1])[:3])


def sweep_table(result: SweepView) -> list[list[str]]:
    """Rows of the speedup matrix (header first)."""
    rows = [["configuration", "overrides", "projected time", "speedup", "FLOPs", "top categories", "status"]]
    for c in result.configs:
        t, _, hi = _time(c, result.time_metric)
        time_text = fmt_metric(result.time_metric)(t) if result.time_metric else fmt_duration(t)
        if math.isfinite(t) and t:
            time_text += f" ± {(hi - t) / abs(t):.1%}"
        p, s = c.projection, c.speedup
        flops = p.totals.get("flops") if p is not None else None
        rows.append([c.name, _overrides_text(c.overrides), time_text,
                     "n/a" if s is None else f"{s.value:.3f}× [{s.interval[0]:.3f}, {s.interval[1]:.3f}]",
                     fmt_count(flops) + "FLOP" if flops is not None else "n/a", _top_categories(p),
                     "failed" if p is None else "ok" if c.complete else f"incomplete ({c.n_failed} failed)"])
    return rows


def _stats_line(result: SweepView) -> str:
    s = result.run_stats
    return (f"executor {result.executor}: {int(s['pairs'])} (configuration, SeqPoint) pairs, "
            f"{int(s['measured'])} measured, {int(s['cached'])} cached, {int(s['failed'])} failed; "
            f"{int(s['tasks'])} tasks; profiling wall time {fmt_duration(s['wall_s'])}")


def print_sweep(console: Console, result: SweepView) -> None:
    """The speedup matrix without the overrides (the names stand for them), a status column only
    when some configuration is incomplete, and the executor's figures."""
    head, *body = sweep_table(result)
    keep = [0, 2, 3, 4, 5] + ([6] if any(row[6] != "ok" for row in body) else [])
    table = Table(title=f"Sweep: {len(body)} configurations on {len(result.seqpoints)} SeqPoints "
                        f"of {len(result.schedule):,} iterations"
                        + (f" ({result.time_metric}; speedup = T_base / T)" if result.time_metric else ""))
    for i in keep:
        table.add_column(head[i], justify="left" if i in (0, 5) else "right")
    for row in body:
        table.add_row(*(row[i] for i in keep), style=None if row[6] == "ok" else "red")
    console.print(table)
    console.print(_stats_line(result), markup=False, highlight=False, soft_wrap=True)


def _write_csv(result: SweepView, path: Path) -> None:
    """``sweep.csv``: one row per configuration, every breakdown category as a column."""
    metric = result.time_metric
    cats = sorted({k for c in result.configs if c.projection is not None for k in breakdown_of(c.projection.totals)})
    header = ["name", "overrides", "time_metric", "projected_s", "interval_low_s",
              "interval_high_s", "flops", "speedup", "speedup_low", "speedup_high", "complete",
              *(f"breakdown_s.{cat}" for cat in cats)]
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for c in result.configs:
            t, lo, hi = _time(c, metric)
            p, s = c.projection, c.speedup
            bd = breakdown_of(p.totals) if p is not None else {}
            writer.writerow([
                c.name, json.dumps(dict(c.overrides), default=str), metric or "",
                *(_num(v) for v in (t, lo, hi)),
                _num(p.totals.get("flops", math.nan) if p is not None else math.nan),
                *(_num(v) for v in ((s.value, *s.interval) if s else (math.nan,) * 3)),
                str(c.complete).lower(),
                *(_num(bd.get(cat, math.nan)) for cat in cats),
            ])


def _num(v: float) -> str:
    return repr(float(v)) if math.isfinite(v) else ""


def _plot(result: SweepView, path: Path) -> Path:
    """Bar chart of each configuration's projected time with its interval, speedup on top."""
    metric = result.time_metric
    names = [c.name for c in result.configs]
    times = [_time(c, metric) for c in result.configs]
    vals = [t if math.isfinite(t) else 0.0 for t, _, _ in times]
    err = [[max(t - lo, 0.0) if math.isfinite(t) else 0.0 for t, lo, _ in times],
           [max(hi - t, 0.0) if math.isfinite(t) else 0.0 for t, _, hi in times]]
    fig, ax = _pyplot().subplots(figsize=(max(5.0, 0.9 * len(names) + 2), 4.2))
    colors = ["#9e9ac8" if i == 0 else "#3182bd" for i in range(len(names))]
    bars = ax.bar(range(len(names)), vals, yerr=err, capsize=4, color=colors)
    for bar, c in zip(bars, result.configs, strict=True):
        label = f"{c.speedup.value:.2f}×" if c.speedup is not None else "n/a"
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    xytext=(0, 8), textcoords="offset points", ha="center", fontsize=8)
    ax.set_xticks(range(len(names)), names, rotation=30 if len(names) > 3 else 0,
                  ha="right" if len(names) > 3 else "center", fontsize=8)
    ax.set(ylabel=f"projected {metric or 'time'} (s)",
           title="Projected whole-run time per configuration (speedup over base on top)")
    ax.margins(y=0.15)
    return _save(fig, path)


def write_sweep_report(result: SweepView, folder: Path, *, title: str, subtitle: str, config_text: str,
                       plots: bool = True, html: bool = True) -> Path:
    """``sweep.csv`` of a sweep in ``folder`` (one row per configuration, every breakdown category as a column), with
    ``plots`` ``sweep.png`` (each configuration's projected time and interval, its speedup on top) and with ``html``
    ``report.html`` (headline, matrix, plot, base config); returns the CSV's path."""
    csv_path = folder / "sweep.csv"
    _write_csv(result, csv_path)
    images = [_plot(result, folder / "sweep.png")] if plots else []
    if not html:
        return csv_path
    best = max((c for c in result.configs if c.speedup is not None),
               key=lambda c: c.speedup.value if c.speedup is not None else -math.inf, default=None)
    headline = [(f"{len(result.configs)}", "configurations"),
                (f"{len(result.seqpoints)}", f"SeqPoints of {len(result.schedule):,} iterations")]
    if best is not None and best.speedup is not None:
        headline.append((f"{best.speedup.value:.2f}×", f"best speedup ({best.name})"))
    write_html_report(
        folder / "report.html", title=title, subtitle=subtitle, headline=headline,
        sections=[Section(title="Sweep", table=sweep_table(result), images=images,
                          text=(f"{len(result.configs)} configurations measured on the same "
                                f"{len(result.seqpoints)} SeqPoints; speedup = T_base / T of "
                                f"{result.time_metric or 'time (not measured)'}, with its 95% "
                                f"interval.\n\n{_stats_line(result)}.")),
                  Section(title="Base configuration", code=config_text)],
    )
    return csv_path
