"""Plots and the HTML page of a run folder (``seqpoint run`` and ``seqpoint validate``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from seqpoint.measurements import STEADY_TIME
from seqpoint.measurements.metrics import breakdown_of, steady_metric, time_metric, unit_of
from seqpoint.projection import fitted_costs
from seqpoint.reports._format import fmt_duration, fmt_pct, fmt_saving
from seqpoint.reports._html import Section, write_html_report
from seqpoint.reports._plots import (
    plot_breakdown,
    plot_cost_vs_length,
    plot_error_vs_k,
    plot_length_histogram,
)
from seqpoint.reports._summaries import saving_rows
from seqpoint.reports._tables import (
    baselines_table,
    cold_term_sentence,
    exact_table,
    fmt_metric,
    overhead_causes,
    points_table,
    projection_table,
)
from seqpoint.reports._views import ProjectedRun, RunRecord, ValidationRecord

__all__ = ["write_run_report", "write_validation_report"]


def _common_plots(result: ProjectedRun, folder: Path,
                  reference: tuple[NDArray[np.int64], NDArray[np.float64]] | None = None) -> list[Path]:
    unit, pts = result.unit, result.seqpoints
    ms = {m.signature: m for m in result.measurements.measurements}
    step = steady_metric(result.projection.totals) or STEADY_TIME  # time_s, or instructions
    ok = [(p.seq_len, ms[p.signature].metrics[step]) for p in pts.points
          if p.signature in ms and ms[p.signature].ok and step in ms[p.signature].metrics]
    paths = [plot_length_histogram(result.schedule.seq_len, pts, folder / "length_histogram.png", unit=unit,
                                   title=f"Sequence length of {len(result.schedule):,} iterations and "
                                         f"the {len(pts)} SeqPoints")]
    if ok:
        xs, ys = zip(*ok, strict=True)
        try:
            fit = result.schedule.seq_len, fitted_costs(result.schedule, pts, result.measurements, step)
        except ValueError:
            fit = None
        paths.append(plot_cost_vs_length(xs, ys, folder / "cost_vs_length.png", fit=fit,
                                         fit_groups=result.schedule.batch_size, reference=reference,
                                         unit=unit, ylabel="time per iteration (s)" if step == STEADY_TIME
                                         else "instructions per iteration (AVX2 path)"))
    bd = breakdown_of(result.projection.totals)
    if bd:
        paths.append(plot_breakdown({"projected": bd}, folder / "breakdown.png"))
    return paths


def write_run_report(result: RunRecord, folder: Path, *, title: str, subtitle: str, config_text: str,
                     plots: bool = True) -> Path:
    """Plots (with ``plots``) and ``report.html`` of a run in ``folder``; returns the HTML path."""
    images = _common_plots(result, folder) if plots else []
    proj = result.projection
    metric = time_metric(proj.totals)
    fmt = fmt_metric(metric)
    t = proj.totals.get(metric, float("nan"))
    lo, hi = proj.interval.get(metric, (float("nan"), float("nan")))
    s = result.summary
    return write_html_report(
        folder / "report.html", title=title, subtitle=subtitle,
        headline=[
            (fmt(t), "projected training time" if unit_of(metric) == "s"
             else "projected instructions (AVX2 path under valgrind)"),
            (f"± {proj.relative_halfwidth(metric):.2%}", "estimated error (95%)"),
            (f"{len(result.seqpoints)}", f"SeqPoints of {len(result.schedule):,} iterations"),
            (fmt_saving(result.reduction, "steps"), "less profiling (steps)"),
            *((v, k) for k, v in saving_rows(result.saving)),
        ],
        sections=[
            Section(title="Schedule", table=[["iterations", "epochs", "unique signatures",
                                              "padding", f"seq_len ({result.unit})"],
                                             [f"{s.n_iterations:,}", s.n_epochs, s.n_unique_signatures,
                                              f"{s.padding_ratio:.1%}",
                                              f"{s.seq_len_min} / {s.seq_len_mean:.0f} / {s.seq_len_max}"]],
                    images=[p for p in images if p.name == "length_histogram.png"]),
            Section(title="SeqPoints", table=points_table(result.seqpoints, result.measurements),
                    images=[p for p in images if p.name == "cost_vs_length.png"]),
            Section(title="Projection", text=f"Interval {fmt(lo)} … {fmt(hi)}; "
                    + ("complete." if proj.complete else
                       f"INCOMPLETE: points at iterations {list(proj.failed)} failed and were "
                       "projected from the others."),
                    table=projection_table(proj),
                    images=[p for p in images if p.name == "breakdown.png"]),
            Section(title="Configuration", code=config_text),
        ],
    )


def write_validation_report(result: ValidationRecord, folder: Path, *, title: str, subtitle: str,
                            config_text: str, plots: bool = True) -> Path:
    """Plots (with ``plots``) and ``report.html`` of a validation; returns the HTML path."""
    images: list[Path] = []
    if plots:
        images = _common_plots(result, folder, reference=(result.schedule.seq_len, result.full.per_iteration_s))
        curves = {m: (c.ks, c.errors) for m, c in result.curves_time.items()}
        images.append(plot_error_vs_k(curves, folder / "error_vs_k_time.png",
                                      noise_floor=result.full.noise_floor,
                                      title="Error of projected time against k (per-iteration truth)"))
        if result.curves_exact:
            curves = {m: (c.ks, c.errors) for m, c in result.curves_exact.items()}
            images.append(plot_error_vs_k(curves, folder / "error_vs_k_flops.png",
                                          title="Error of projected FLOPs against k (exact truth)"))
    steady = result.steady
    truth = result.truth
    lo, hi = truth.interval_s
    return write_html_report(
        folder / "report.html", title=title, subtitle=subtitle,
        headline=[
            (fmt_duration(truth.measured_s), "measured full run"),
            (fmt_duration(truth.projected_s), f"projected from {len(result.seqpoints)} SeqPoints"),
            (fmt_pct(truth.error), "error"),
            (fmt_pct(result.full.noise_floor).lstrip("+"), "noise floor (two identical runs)"),
            (fmt_saving(result.reduction, "steps"), "less profiling"),
        ],
        sections=[
            Section(title="Measured time", text=(
                f"Runs: {', '.join(fmt_duration(x) for x in result.full.totals_s)}"
                + (f" ({result.full.interleaved} timed between the SeqPoints' worker processes)"
                   if result.full.interleaved else "")
                + ". Interval of the "
                f"projection: {fmt_duration(lo)} … {fmt_duration(hi)} "
                f"({'contains' if truth.within else 'does NOT contain'} the measured mean). "
                "Baselines are profiled with the same harness at the same number of points."
                + (f"\n\nSteady-state truth (every one of the {steady.n_signatures} signatures "
                   f"profiled in isolation): {fmt_duration(steady.total_s)}. The full run costs "
                   f"{fmt_pct(steady.in_sequence_overhead)} more: "
                   f"{overhead_causes(result.full.interleaved)}. The last column is each "
                   "method's own (selection) error."
                   + cold_term_sentence(result.projection) if steady else "")),
                table=baselines_table(result),
                images=[p for p in images if p.name.startswith(("error_vs_k_time", "cost_vs"))]),
            Section(title="Deterministic metrics (exact totals)",
                    table=exact_table(result) if result.exact else None,
                    images=[p for p in images if p.name.startswith("error_vs_k_flops")]),
            Section(title="Schedule and SeqPoints",
                    table=points_table(result.seqpoints, result.measurements),
                    images=[p for p in images if p.name in ("length_histogram.png", "breakdown.png")]),
            Section(title="Configuration", code=config_text),
        ],
    )
