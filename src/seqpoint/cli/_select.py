"""``seqpoint select``: choose SeqPoints (or a baseline's points) from a schedule."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer

from seqpoint.cli._app import app, console, fail
from seqpoint.cli._options import AsJson, QuietTables, UserCode, print_json, print_warnings
from seqpoint.exceptions import SeqPointWarning
from seqpoint.reports import print_selection
from seqpoint.schedule import read_schedule
from seqpoint.selection import write_seqpoints, write_simpoints

__all__ = ["select"]


@app.command("select")
def select(
    schedule: Annotated[Path, typer.Argument(help="SCHEDULE.csv or .parquet from 'seqpoint schedule'.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="SEQPOINTS.json to write.")],
    n_points: Annotated[int | None, typer.Option(
        "-k", "--n-points", help="Number of points to profile.")] = None,
    max_error: Annotated[float | None, typer.Option(
        "--max-error", help="Target relative error (0.001 = 0.1%); seqpoint method only.")] = None,
    method: Annotated[str, typer.Option("--method", help="Selection method.")] = "seqpoint",
    seed: Annotated[int, typer.Option("--seed", help="Seed of randomised methods.")] = 0,
    proxy: Annotated[str | None, typer.Option(
        "--proxy", help="Cost proxy for seqpoint/stratified, as [selection] proxy (auto, the default, is "
        "attention here: no workload to count).")] = None,
    grouping: Annotated[str | None, typer.Option(
        "--grouping", help="seqpoint grouping: optimal (default) or sl_bins.")] = None,
    simpoints: Annotated[Path | None, typer.Option(
        "--simpoints", help="Also write STEM.simpoints and STEM.weights in SimPoint 3.0's format "
                            "(interval = iteration), for simulators.")] = None,
    workload: Annotated[str | None, typer.Option(
        "--workload", "-w", help="The workload the points will be profiled on (as for 'seqpoint profile'): "
                                 "the default proxy then adds its exact FLOPs and bytes per signature to the "
                                 "grouping, as 'seqpoint run' does (counted on the meta device, no step run).")] = None,
    allow_user_code: UserCode = False,
    as_json: AsJson = False,
    quiet: QuietTables = False,
) -> None:
    """Choose the iterations to profile and their weights; write SEQPOINTS.json."""
    from seqpoint.workflows import (
        Campaign,
        RunConfig,
        SelectionSection,
        WorkloadSection,
        choose_points,
    )
    from seqpoint.workloads import check_user_code

    if (n_points is None) == (max_error is None):
        fail("Give exactly one of -k N and --max-error FRACTION.")
    # Refused rather than accepted and not used by the method.
    if grouping is not None and method != "seqpoint":
        fail(f"--grouping applies to --method seqpoint, not {method!r}; drop it.")
    # The flags are [selection]'s keys: the section checks them with the TOML's message.
    # Without a workload, auto (the default) is the attention formula.
    sec = SelectionSection(method=method, n_points=n_points, max_error=max_error, seed=seed,
                           proxy="attention" if proxy in (None, "auto") and workload is None else proxy or "auto",
                           params={} if grouping is None else {"grouping": grouping})
    if sec.model_proxy and workload is None:
        fail(f"--proxy {sec.proxy} is the profiled model's cost, which needs a workload: add --workload NAME, "
             "or give a formula (attention, tokens, ...).")
    if workload is not None:
        check_user_code(workload, allowed=allow_user_code)
    # A data-parallel schedule is selected on its rank rows (every rank's batch an
    # iteration of its own); `seqpoint project` reads it back the same way.
    sched = read_schedule(schedule).rank_rows()
    if n_points is not None and n_points > len(sched):
        fail(f"-k {n_points} exceeds the {len(sched)} iterations of {schedule}; choose k <= {len(sched)}.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SeqPointWarning)
        if workload is None:
            _, points = choose_points(sec, sched)
        else:
            points = Campaign(RunConfig(selection=sec, workload=WorkloadSection(name=workload)), schedule=sched).seqpoints
    print_warnings(w.message for w in caught)
    write_seqpoints(points, output)
    written: list[str] = []
    if simpoints is not None:
        written = [str(w) for w in write_simpoints(points, simpoints)]
    if as_json:
        print_json({"output": str(output), "method": method, "n_points": len(points),
                    "n_iterations": points.n_iterations,
                    "estimated_error": points.meta.get("estimated_error"),
                    "calibrated_error": points.meta.get("calibrated_error"), "simpoints": written})
        return
    if written:
        console.print(f"wrote {', '.join(written)} (SimPoint format)", markup=False)
    if not quiet:
        print_selection(console, points, method=method)
    console.print(f"wrote {output}")
