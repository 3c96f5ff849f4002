"""Plots and the HTML page of a run folder (``seqpoint run`` and ``seqpoint validate``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqpoint.reports import (
    Section,
    fmt_count,
    fmt_duration,
    fmt_pct,
    fmt_ratio,
    plot_breakdown,
    plot_cost_vs_length,
    plot_error_vs_k,
    plot_length_histogram,
    write_html_report,
)

if TYPE_CHECKING:
    from seqpoint.pipeline._run import RunResult
    from seqpoint.pipeline._validate import ValidationResult

__all__ = ["write_run_report", "write_validation_report"]

_PREFIX = "breakdown_s."


def breakdown_of(totals: dict[str, float]) -> dict[str, float]:
    """Operation category -> seconds from projected totals (``breakdown_s.<cat>`` keys)."""
    return {k[len(_PREFIX):]: float(v) for k, v in totals.items() if k.startswith(_PREFIX) and v > 0}


def _points_table(result: Any) -> list[list[object]]:
    ms = {m.signature: m for m in result.measurements.measurements}
    rows: list[list[object]] = [["iteration", "batch", "seq_len", "tgt_len", "weight", "share", "time/step"]]
    n = result.seqpoints.n_iterations
    for p in result.seqpoints.points:
        m = ms.get(p.signature)
        t = fmt_duration(m.metrics["time_s"]) if m is not None and m.ok else (m.status if m else "-")
        rows.append([p.iteration, p.batch_size, p.seq_len, p.tgt_len, f"{p.weight:g}",
                     f"{p.weight / n:.1%}", t])
    return rows


def _projection_table(proj: Any) -> list[list[object]]:
    rows: list[list[object]] = [["metric", "projected total", "95% interval"]]
    for metric, total in proj.totals.items():
        if metric.startswith(_PREFIX) or metric.endswith(("_iqr", "_std", "_min", "_max")):
            continue
        lo, hi = proj.interval.get(metric, (float("nan"), float("nan")))
        fmt = _formatter(metric)
        rows.append([metric, fmt(total), f"{fmt(lo)} … {fmt(hi)}"])
    return rows


def _formatter(metric: str) -> Callable[[float], str]:
    """Human format of a metric's value by the unit in its name."""
    if metric.endswith("_s"):
        return fmt_duration
    unit = "B" if metric.endswith("bytes") else "FLOP" if metric.startswith("flops") else ""
    return lambda v: fmt_count(v) + unit


def _fit_curve(result: Any) -> tuple[Any, Any] | None:
    from seqpoint.projection import fitted_costs

    try:
        fitted = fitted_costs(result.schedule, result.seqpoints, result.measurements, "time_s")
    except ValueError:
        return None
    return result.schedule.seq_len, fitted


def _common_plots(result: Any, folder: Path, reference: tuple[Any, Any] | None = None) -> list[Path]:
    unit = result.unit
    pts = result.seqpoints
    ms = {m.signature: m for m in result.measurements.measurements}
    ok = [(p.seq_len, ms[p.signature].metrics["time_s"]) for p in pts.points
          if p.signature in ms and ms[p.signature].ok]
    paths = [
        plot_length_histogram(result.schedule.seq_len, pts, folder / "length_histogram.png", unit=unit,
                              title=f"Sequence length of {len(result.schedule):,} iterations and "
                                    f"the {len(pts)} SeqPoints"),
    ]
    if ok:
        xs, ys = zip(*ok, strict=True)
        paths.append(plot_cost_vs_length(xs, ys, folder / "cost_vs_length.png", fit=_fit_curve(result),
                                         fit_groups=result.schedule.batch_size, reference=reference,
                                         unit=unit))
    bd = breakdown_of(result.projection.totals)
    if bd:
        paths.append(plot_breakdown({"projected": bd}, folder / "breakdown.png"))
    return paths


def write_run_report(result: RunResult) -> Path:
    """Plots and ``report.html`` of a run; returns the HTML path."""
    folder = result.folder.path
    cfg = result.config
    images = _common_plots(result, folder) if cfg.report.plots else []
    proj = result.projection
    metric = "run_time_s" if "run_time_s" in proj.totals else "time_s"
    t = proj.totals.get(metric, float("nan"))
    lo, hi = proj.interval.get(metric, (float("nan"), float("nan")))
    s = result.summary
    return write_html_report(
        folder / "report.html",
        title=f"seqpoint run: {cfg.name}",
        subtitle=f"{cfg.workload.name} · {cfg.lengths.source} · {cfg.batching.policy}",
        headline=[
            (fmt_duration(t), "projected training time"),
            (f"± {proj.relative_halfwidth(metric):.2%}", "estimated error (95%)"),
            (f"{len(result.seqpoints)}", f"SeqPoints of {len(result.schedule):,} iterations"),
            (fmt_ratio(result.reduction), "less profiling"),
        ],
        sections=[
            Section(title="Schedule", table=[["iterations", "epochs", "unique signatures",
                                              "padding", f"seq_len ({result.unit})"],
                                             [f"{s.n_iterations:,}", s.n_epochs, s.n_unique_signatures,
                                              f"{s.padding_ratio:.1%}",
                                              f"{s.seq_len_min} / {s.seq_len_mean:.0f} / {s.seq_len_max}"]],
                    images=[p for p in images if p.name == "length_histogram.png"]),
            Section(title="SeqPoints", table=_points_table(result),
                    images=[p for p in images if p.name == "cost_vs_length.png"]),
            Section(title="Projection", text=f"Interval {fmt_duration(lo)} … {fmt_duration(hi)}; "
                    + ("complete." if proj.complete else
                       f"INCOMPLETE: points at iterations {list(proj.failed)} failed and were "
                       "projected from the others."),
                    table=_projection_table(proj),
                    images=[p for p in images if p.name == "breakdown.png"]),
            Section(title="Configuration", code=cfg.to_toml()),
        ],
    )


def write_validation_report(result: ValidationResult) -> Path:
    """Plots and ``report.html`` of a validation; returns the HTML path."""
    folder = result.folder.path
    cfg = result.config
    images: list[Path] = []
    if cfg.report.plots:
        images = _common_plots(result, folder,
                               reference=(result.schedule.seq_len, result.full.per_iteration_s))
        curves = {m: (c.ks, c.errors) for m, c in result.curves_time.items()}
        images.append(plot_error_vs_k(curves, folder / "error_vs_k_time.png",
                                      noise_floor=result.full.noise_floor,
                                      title="Error of projected time against k (per-iteration truth)"))
        if result.curves_exact:
            curves = {m: (c.ks, c.errors) for m, c in result.curves_exact.items()}
            images.append(plot_error_vs_k(curves, folder / "error_vs_k_flops.png",
                                          title="Error of projected FLOPs against k (exact truth)"))
    steady = result.steady
    rows: list[list[object]] = [["method", "k", "projected", "error vs full run",
                                 "error vs steady-state truth"]]
    rows.append(["seqpoint", len(result.seqpoints), fmt_duration(result.projected_s), fmt_pct(result.error),
                 fmt_pct(steady["selection_error"]) if steady else "n/a"])
    for m, b in result.baselines.items():
        rows.append([m, int(b["k"]), fmt_duration(b["projected_s"]), fmt_pct(b["error"]),
                     fmt_pct(b.get("selection_error", float("nan")))])
    exact_rows: list[list[object]] = [["metric", "exact total", "projected", "error"]]
    for metric, e in result.exact.items():
        fmt = _formatter(metric)
        exact_rows.append([metric, fmt(e["exact"]), fmt(e["projected"]), fmt_pct(e["error"], 3)])
    lo, hi = result.interval_s
    return write_html_report(
        folder / "report.html",
        title=f"seqpoint validation: {cfg.name}",
        subtitle=f"{cfg.workload.name} · {len(result.schedule):,} iterations run in full x{result.full.n_runs}",
        headline=[
            (fmt_duration(result.measured_s), "measured full run"),
            (fmt_duration(result.projected_s), f"projected from {len(result.seqpoints)} SeqPoints"),
            (fmt_pct(result.error), "error"),
            (fmt_pct(result.full.noise_floor).lstrip("+"), "noise floor (two identical runs)"),
            (fmt_ratio(result.reduction), "less profiling"),
        ],
        sections=[
            Section(title="Measured time", text=(
                f"Runs: {', '.join(fmt_duration(x) for x in result.full.totals_s)}. Interval of the "
                f"projection: {fmt_duration(lo)} … {fmt_duration(hi)} "
                f"({'contains' if result.within_interval else 'does NOT contain'} the measured mean). "
                "Baselines are profiled with the same harness at the same number of points."
                + (f"\n\nSteady-state truth (every one of the {int(steady['n_signatures'])} signatures "
                   f"profiled in isolation): {fmt_duration(steady['total_s'])}. The full run costs "
                   f"{fmt_pct(steady['in_sequence_overhead'])} more: cold steps (first occurrences "
                   "and shapes whose oneDNN primitives were evicted), which SeqPoint's projection "
                   "charges, and allocator growth and churn, which no method profiling iterations "
                   "in isolation can see. The last column is each method's own (selection) error."
                   + _cold_text(result.projection) if steady else "")),
                table=rows, images=[p for p in images if p.name.startswith(("error_vs_k_time", "cost_vs"))]),
            Section(title="Deterministic metrics (exact totals)", table=exact_rows if result.exact else None,
                    images=[p for p in images if p.name.startswith("error_vs_k_flops")]),
            Section(title="Schedule and SeqPoints", table=_points_table(result),
                    images=[p for p in images if p.name in ("length_histogram.png", "breakdown.png")]),
            Section(title="Configuration", code=cfg.to_toml()),
        ],
    )


def cold_steps_text(proj: Any) -> str:
    """What the first-occurrence term charged, in words."""
    cold = getattr(proj, "cold_steps", {}) or {}
    text = f"the cold first step of {cold.get('first', 0):,} shapes"
    if cold.get("evicted"):
        text += (f" and {cold['evicted']:,} steps whose shape oneDNN's primitive cache "
                 "had evicted")
    return text + ", at the SeqPoints' measured cold/steady ratio"


def _cold_text(proj: Any) -> str:
    """The cold-step term of a projection, as a sentence (empty when it has none)."""
    if "first_occurrence_s" not in proj.totals:
        return ""
    return (f" SeqPoint's projection includes {fmt_duration(proj.totals['first_occurrence_s'])} of cold "
            f"steps: {cold_steps_text(proj)}.")
