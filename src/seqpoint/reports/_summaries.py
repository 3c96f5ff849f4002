"""Terminal summaries of a projected run, a validation and a speedup, and the tables of a run projected beyond its
profile: a rank schedule's projection, the DDP validation, and the run projected onto another GPU."""

from __future__ import annotations

import math

from rich.console import Console
from rich.table import Table

from seqpoint.measurements import STEADY_TIME
from seqpoint.measurements.metrics import (
    BREAKDOWN_PREFIX,
    INSTRUCTIONS,
    RUN_TIME,
    breakdown_of,
    derived_of,
    steady_metric,
    time_metric,
)
from seqpoint.projection import DeviceProjection, Speedup, student_quantile
from seqpoint.reports._format import fmt_count, fmt_duration, fmt_pct, fmt_ratio, fmt_saving
from seqpoint.reports._tables import (
    Fmt,
    Rows,
    baselines_table,
    breakdown_table,
    cold_steps_text,
    exact_table,
    fmt_metric,
    overhead_causes,
    render,
)
from seqpoint.reports._terminal import print_histogram, print_ranks, print_seqpoints
from seqpoint.reports._views import RunRecord, TraceRecord, ValidationRecord
from seqpoint.validation import MeasuredSpeedup, ProfilingSaving, TruthComparison

__all__ = ["device_projection_table", "print_device_projection", "print_run", "print_speedup",
           "print_trace_validation", "print_validation"]


def print_run(console: Console, result: RunRecord) -> None:
    """A run: the length histogram with its SeqPoints, their table, then the headline (projected
    time, its interval, breakdown, reduction factor)."""
    print_histogram(console, result.schedule, result.seqpoints, unit=result.unit)
    print_seqpoints(console, result.seqpoints, result.measurements)
    proj = result.projection
    metric = time_metric(proj.totals)
    step = steady_metric(proj.totals) or STEADY_TIME
    cold_name = derived_of(step)[0]
    fmt = fmt_metric(metric)
    lo, hi = proj.interval[metric]
    table = Table(title="Projected whole run", show_header=False)
    table.add_column(justify="left")
    table.add_column(justify="right")
    dp = result.data_parallel
    table.add_row("iterations" if dp is None else "rank rows (steps × ranks)", f"{len(result.schedule):,}")
    headline = "projected training time" if dp is None else "all ranks' work (Σ over rank rows)"
    if step == INSTRUCTIONS:
        headline = "projected instructions (user space, AVX2 path under valgrind)"
    table.add_row(headline, f"[bold]{fmt(proj.totals[metric])}[/]")
    if cold_name in proj.totals:
        cold = proj.cold_steps
        label = f"  of which cold steps ({sum(cold.values()):,})" if cold else "  of which cold steps"
        term = proj.cold_term
        how = (f"  ({term['share']:.1%} of the run; from the {term['method'].replace('_', ' ')})"
               if term.get("share") is not None else "")
        table.add_row(label, fmt(proj.totals[cold_name]) + how)
    if compiled := proj.compile_term:
        graphs = round(compiled["graphs"])
        table.add_row(f"  of which torch.compile ({graphs} graph{'' if graphs == 1 else 's'})",
                      f"{fmt(compiled['total_s'])}  (once: the recompiles after the start-up shape)")
    table.add_row("95% interval", f"{fmt(lo)} … {fmt(hi)}  (± {proj.relative_halfwidth(metric):.2%})")
    total = abs(proj.totals[metric])
    if total and metric in proj.noise:
        n = len(result.seqpoints)
        table.add_row("  = selection", f"± {proj.representation[metric] / total:.2%}  "
                      f"(how far {n} points can be from every iteration)")
        why = (f"{proj.processes} worker processes' spread × "
               f"{student_quantile(proj.confidence, proj.processes - 1):.2f}" if proj.processes
               else "the points' repeats")
        table.add_row("  + timing noise" if step == STEADY_TIME else "  + count noise",
                      f"± {proj.noise[metric] / total:.2%}  ({why})")
        if metric == derived_of(step)[1] and proj.in_run_gap and (window := result.measurements.window):
            table.add_row("  + in-run gap", f"± {proj.in_run_gap / total:.2%}  (the run's first "
                          f"{len(window.times_s)} steps timed in sequence against their projection)")
        if metric == derived_of(step)[1] and proj.compile_term:
            table.add_row("  + torch.compile", f"± {proj.compile_term['halfwidth_s'] / total:.2%}  (the processes' "
                          "spread and one graph more or fewer)")
        if step == STEADY_TIME:
            table.add_row("  not in it", "the machine's speed changing after profiling (validate measures it)")
    if "flops" in proj.totals:
        table.add_row("projected FLOPs", fmt_count(proj.totals["flops"]) + "FLOP")
    table.add_row("profiled steps", steps_text(result))
    table.add_row("less profiling (steps)", fmt_saving(result.reduction, "steps", bold=True))
    for label, value in saving_rows(result.saving):
        table.add_row(label, value)
    exact = result.exact
    if exact:
        for k in ("flops", "bytes"):
            if k in exact["totals"]:
                err = exact.get("projection_error", {}).get(k)
                table.add_row(f"exact {k} (whole run, {exact['method']})",
                              fmt_count(exact["totals"][k])
                              + ("" if err is None else f"  (SeqPoints {fmt_pct(err)})"))
    for op in result.uncounted or []:
        table.add_row("[yellow]not in FLOPs[/]", f"{op['name']} ({op['share']:.1%} of step time, no FLOP formula)")
    if not proj.complete:
        table.add_row("[red]incomplete[/]", f"points at iterations {list(proj.failed)} failed")
    if dp is not None:
        # The rows above sum every rank's work; the run's time is the data-parallel one.
        table.add_row(f"data-parallel time ({dp.world_size} ranks, steady state)", f"[bold]{fmt_duration(dp.total_s)}[/]")
    console.print(table)
    if dp is not None:
        print_ranks(console, dp)
    bd = breakdown_of(proj.totals)
    if bd:
        console.print(render(breakdown_table(bd), title="Projected operation breakdown"))
    if result.device_projection is not None:
        print_device_projection(console, result.device_projection, proj.totals)


def steps_text(result: RunRecord) -> str:
    """The training steps the campaign ran, as the reduction factor counts them, and where they went."""
    warm, timed, profiled = result.steps_per_point
    processes, each, protocol, window = result.campaign_steps
    n = len(result.seqpoints)
    warm_text = f"{warm} warm-up"
    if processes > 1 and each:
        # every worker warms every point up; so does the breakdown's own process
        who = f"{processes} workers" if warm == processes * each else f"({processes} workers + the breakdown's)"
        warm_text = f"{who} × {each} warm-up"
    parts = f"{warm_text} + {timed} timed" + (f" + {profiled} profiled" if profiled else "")
    extra = (f" + {protocol} for the workers' start-up and drift checks" if protocol else "") + (
        f" + {window} in the cold-step window" if window else "")
    total = n * (warm + timed + profiled) + protocol + window
    return f"{total:,} ({n} points × ({parts}){extra})"


def saving_rows(saving: ProfilingSaving | None) -> list[tuple[str, str]]:
    """Rows for the wall-clock and token savings beside the step count."""
    if saving is None:
        return []
    rows = []
    if math.isfinite(saving.wall_clock):
        pays = f"; pays off past {saving.break_even:,.0f} iterations" if math.isfinite(saving.break_even) else ""
        rows.append(("less profiling (wall clock)",
                     f"{fmt_saving(saving.wall_clock, 'wall clock')}  ({fmt_duration(saving.profiling_s)} profiled{pays})"))
    rows.append(("less profiling (tokens)", fmt_saving(saving.tokens, "tokens")))
    return rows


def print_validation(console: Console, result: ValidationRecord, *, seqpoints: bool = True) -> None:
    """The SeqPoints' table (with ``seqpoints``), then the projection and baselines against the
    measured full runs, beside the noise floor."""
    if seqpoints:
        print_seqpoints(console, result.seqpoints, result.measurements)
    full, truth = result.full, result.truth
    fmt = fmt_metric(full.metric)  # seconds, or instructions counted under callgrind
    rows = baselines_table(result)
    rows[1] = [f"[bold]{c}[/]" if i in (0, 3, 4) else c for i, c in enumerate(rows[1])]
    console.print(render(rows, left=0,
                         title=f"Validation on {len(result.schedule):,} iterations run in full "
                               f"×{full.n_runs}"))
    when = (f", {'all' if full.interleaved == full.n_runs else full.interleaved} timed between the "
            "SeqPoints' worker processes" if full.interleaved else "")
    counted = ", counted under callgrind" if full.metric == INSTRUCTIONS else ""
    console.print(f"measured full run (mean of {full.n_runs} fresh processes{counted}{when}): "
                  f"[bold]{fmt(truth.measured_s)}[/]")
    totals = result.projection.totals
    step = steady_metric(totals) or STEADY_TIME
    cold = derived_of(step)[0]
    if cold in totals:
        r, window = result.projection.in_run_ratio, result.measurements.window
        gap = (f"; the run's first {len(window.times_s)} steps timed in sequence ran {r:.3f}× their projection "
               f"(in-run gap ± {result.projection.in_run_gap / totals[derived_of(step)[1]]:.2%} in the interval)"
               if r is not None and window else "")
        console.print(f"projected = steady state {fmt(totals[step])} + cold steps "
                      f"{fmt(totals[cold])} ({cold_steps_text(result.projection)}){gap}.")
    steady = result.steady
    if steady:
        console.print(f"steady-state truth (all {steady.n_signatures} signatures profiled in isolation): "
                      f"{fmt(steady.total_s)}; the full run costs "
                      f"[bold]{fmt_pct(steady.in_sequence_overhead)}[/] more (in-sequence overhead: "
                      f"{overhead_causes(full.interleaved)}).")
    console.print(
        f"noise floor (identical full runs {', '.join(fmt(x) for x in full.totals_s)}): "
        f"[bold]{fmt_pct(full.noise_floor).lstrip('+')}[/]; {_holds(truth, fmt)} the "
        f"measured mean; profiling reduction {fmt_ratio(result.reduction)}"
        + (" (below 1: profiling the SeqPoints took more steps than this part of the run has; "
           "sampling pays off on runs much longer than k × the steps per point)." if result.reduction < 1 else "."))
    if result.exact:
        console.print(render(exact_table(result), left=0, title="Deterministic metrics against their exact totals"))


def _holds(truth: TruthComparison, fmt: Fmt = fmt_duration) -> str:
    """The interval the truth is held to, what it includes, and whether it holds the mean."""
    lo, hi = truth.interval_s
    drift = truth.drift
    grown = ("" if drift is None else
             f" (with the machine's drift since profiling, [bold]{fmt_pct(drift.change)}[/] ± "
             f"{drift.standard_error:.2%} on the check point re-timed after each full run)")
    return (f"projection interval{grown} {fmt(lo)} … {fmt(hi)} "
            f"{'contains' if truth.within else '[red]does not contain[/]'}")


def print_speedup(console: Console, speedup: Speedup, *, n_points: int,
                  measured: MeasuredSpeedup | None = None) -> None:
    """Projected speedup of B over A, in total and per operation category, beside the
    ``measured`` speedup of their full runs."""
    lo, hi = speedup.interval
    what = {RUN_TIME: "whole run", STEADY_TIME: "steady state"}.get(speedup.metric, speedup.metric)
    fmt = fmt_metric(speedup.metric)
    rows = [["", "A", "B", "speedup"], [what, fmt(speedup.total_a), fmt(speedup.total_b),
                                         f"[bold]{speedup.value:.3f}×[/] ({lo:.3f}…{hi:.3f})"]]
    if speedup.steady_value is not None:
        # How much of the ratio the cold-step terms make: bf16 on a CPU pays far more for a
        # shape's first step than fp32, which the steady state alone does not see.
        rows.append(["steady state alone", "", "", f"{speedup.steady_value:.3f}×"])
    rows += [[c.removeprefix(BREAKDOWN_PREFIX), "", "", f"{v:.3f}×"] for c, v in sorted(speedup.per_category.items())]
    console.print(render(rows, left=0, title=f"Projected speedup of B over A on {n_points} SeqPoints"))
    if speedup.value:
        # The interval's parts, as `seqpoint run` shows a projection's.
        why = (f"the ratios of {speedup.pairs} A/B worker pairs' run totals × t "
               f"{student_quantile(speedup.confidence, speedup.pairs - 1):.2f}"
               + (", and the cold-step terms'" if speedup.metric == RUN_TIME else "") if speedup.pairs
               else "A's and B's combined as independent")
        console.print(f"interval ± {speedup.relative_halfwidth():.2%} = the two projection methods' "
                      f"spread ± {speedup.representation / abs(speedup.value):.2%} + timing noise "
                      f"± {speedup.noise / abs(speedup.value):.2%} ({why})"
                      + (f" + in-run gap ± {speedup.in_run_gap / abs(speedup.value):.2%} (each configuration's "
                         "in-sequence window against its projection)" if speedup.in_run_gap else "") + ".")
    if measured is not None:
        _print_measured_speedup(console, speedup, measured, fmt)


def _print_measured_speedup(console: Console, speedup: Speedup, m: MeasuredSpeedup, fmt: Fmt) -> None:
    inside = m.held_by(speedup.interval)
    se = m.standard_error
    # The rounds' own ratios beside the floor: a machine whose speed moves between rounds
    # widens the floor (every pairing of A's and B's runs) while each round's A/B agrees.
    rounds = ", ".join(f"{r:.3f}×" for r in m.per_round)
    floor = (f"noise floor [bold]{fmt_pct(m.noise_floor).lstrip('+')}[/]"
             + (f", standard error {fmt_pct(se).lstrip('+')}" if se is not None else "")
             + f" (each round's A/B: {rounds})"
             if m.n_rounds >= 2 else "one round: set [validation] runs = 2 or more for the noise floor")
    runs = ", ".join(f"{fmt(a)} / {fmt(b)}" for a, b in zip(m.runs_a_s, m.runs_b_s, strict=True))
    verdict = "contains the measured speedup"
    if not inside:
        agrees = m.agrees_with(speedup.value, speedup.interval, speedup.confidence)
        verdict = ("[red]does not contain[/] the measured speedup" + (
            "" if agrees is None else
            ", but the two agree within the measured ratio's own error: more rounds would tell them apart"
            if agrees else ", even counting the measured ratio's own error"))
    console.print(f"measured (full runs A / B, {m.n_rounds} round(s): {runs}): [bold]{m.value:.3f}×[/]; {floor}. "
                  f"Projection error [bold]{fmt_pct(m.error_of(speedup.value))}[/]; its interval {verdict}.")


def print_trace_validation(console: Console, result: TraceRecord) -> None:
    """The projection and first-N against recorded real runs, beside the noise floor."""
    t = result.truth
    rows = [["method", "profiled", "projected", "error vs recorded run"],
            ["[bold]seqpoint[/]", f"{result.n_points} points", fmt_duration(t.projected_s),
             f"[bold]{fmt_pct(t.error)}[/]"],
            [f"first {result.first_n}", f"{result.first_n} steps", fmt_duration(result.first_n_s),
             fmt_pct(result.first_n_error)]]
    console.print(render(rows, left=0, title=f"Against {len(t.runs_s)} recorded run(s) of {result.n_steps:,} "
                                             f"steps ({result.n_iterations:,} micro-batches)"))
    floor = (f"noise floor (identical recorded runs {', '.join(fmt_duration(x) for x in t.runs_s)}): "
             f"[bold]{fmt_pct(t.noise_floor).lstrip('+')}[/]; " if len(t.runs_s) >= 2
             else "one recorded run: record a second to measure the noise floor; ")
    console.print(f"recorded run: [bold]{fmt_duration(t.measured_s)}[/]; {floor}{_holds(t)} the recorded mean.")
    term, window, ratio = result.projection.cold_term, result.window, result.projection.in_run_ratio
    if term.get("share") is not None:
        steps = f"the run's first {len(window.times_s)} micro-batches timed in sequence" if window else ""
        source = (f"{steps} ([profile] cold_window)" if term.get("method") == "window" and window
                  else "the SeqPoints' first steps")
        console.print(f"cold steps: {term['share']:.1%} of the projection, calibrated from {source}"
                      + (f"; in-run ratio {ratio:.3f} ({steps} against their projection)" if ratio and window
                         else "") + ".")


def device_projection_table(dp: DeviceProjection, profiled: dict[str, float]) -> Rows:
    """Rows: each category's projected seconds on the profiled device (``profiled``: the run's
    totals) and on the other one, then the run's totals."""
    target = breakdown_of(dp.projection.totals)
    rows = [["", dp.profiled_on, dp.device, "ratio"]]
    for cat, sec in sorted(breakdown_of(profiled).items(), key=lambda kv: -kv[1]):
        on = target.get(cat, 0.0)
        rows.append([cat, fmt_duration(sec), fmt_duration(on), f"{on / sec:.3f}"])
    lo, hi = dp.interval
    slo, shi = dp.speedup_interval
    rows += [["whole run", fmt_duration(dp.profiled_total), f"{fmt_duration(dp.total)}  ({fmt_duration(lo)} … "
              f"{fmt_duration(hi)})", f"{dp.total / dp.profiled_total:.3f}"],
             [f"speedup on {dp.device}", "", f"{fmt_ratio(dp.speedup)}  ({fmt_ratio(slo)} … {fmt_ratio(shi)})", ""]]
    return rows


def print_device_projection(console: Console, dp: DeviceProjection, profiled: dict[str, float]) -> None:
    """Print the run projected onto another GPU, and what its interval assumes."""
    console.print(render(device_projection_table(dp, profiled),
                         title=f"Projected onto {dp.device} from the SeqPoints profiled on {dp.profiled_on}"))
    console.print(f"Each category scaled by the device model's time of its operators on the two devices; "
                  f"{dp.kept_share:.1%} of the profiled steps (outside the operators) kept as measured. "
                  "The interval takes every category's ratio off by the model's measured error on ratios "
                  "between GPUs, either way.")
