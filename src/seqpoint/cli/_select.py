"""``seqpoint select``: choose SeqPoints (or a baseline's points) from a schedule."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

from seqpoint.cli._app import app, console, err_console, fail
from seqpoint.cli._options import AsJson, Quiet, print_json
from seqpoint.exceptions import SeqPointWarning
from seqpoint.reports import print_selection
from seqpoint.schedule import read_schedule
from seqpoint.selection import COST_MODELS, SELECTORS, make_selector, write_seqpoints

__all__ = ["select"]


@app.command("select")
def select(
    schedule: Annotated[Path, typer.Argument(help="SCHEDULE.csv or .parquet from 'seqpoint schedule'.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="SEQPOINTS.json to write.")],
    n_points: Annotated[
        int | None, typer.Option("-k", "--n-points", help="Number of points to profile.")
    ] = None,
    max_error: Annotated[
        float | None,
        typer.Option("--max-error", help="Target relative error (0.001 = 0.1%); seqpoint method only."),
    ] = None,
    method: Annotated[str, typer.Option("--method", help="Selection method.")] = "seqpoint",
    seed: Annotated[int, typer.Option("--seed", help="Seed of randomised methods.")] = 0,
    proxy: Annotated[
        str | None, typer.Option("--proxy", help="Cost proxy for seqpoint/stratified (default attention), "
                                                 "as [selection] proxy.")
    ] = None,
    cost: Annotated[str | None, typer.Option("--cost", hidden=True, help="Deprecated: use --proxy.")] = None,
    grouping: Annotated[
        str | None, typer.Option("--grouping", help="seqpoint grouping: optimal (default) or sl_bins.")
    ] = None,
    simpoints: Annotated[
        Path | None,
        typer.Option("--simpoints", help="Also write STEM.simpoints and STEM.weights in SimPoint 3.0's "
                                         "format (interval = iteration), for simulators."),
    ] = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
) -> None:
    """Choose the iterations to profile and their weights; write SEQPOINTS.json."""
    if method not in SELECTORS:
        fail(f"Unknown selection method {method!r}. Valid names: {', '.join(SELECTORS.names())}.")
    if (n_points is None) == (max_error is None):
        fail("Give exactly one of -k N and --max-error FRACTION.")
    if max_error is not None and method != "seqpoint":
        fail(f"--max-error works with --method seqpoint only; give -k N for {method!r}.")
    if n_points is not None and n_points < 1:
        fail(f"-k must be an int >= 1. Got {n_points}.")
    if max_error is not None and not 0 < max_error < 1:
        fail(f"--max-error must be a fraction in (0, 1), e.g. 0.001 for 0.1%. Got {max_error:g}.")
    if cost is not None:
        if proxy is not None:
            fail("Give --proxy only (--cost is its deprecated name).")
        proxy = cost
    # Refused rather than accepted and not used by the method.
    if proxy is not None and method not in ("seqpoint", "stratified"):
        fail(f"--proxy applies to --method seqpoint or stratified, not {method!r}; drop it.")
    if grouping is not None and method != "seqpoint":
        fail(f"--grouping applies to --method seqpoint, not {method!r}; drop it.")
    proxy_name = proxy or "attention"
    grouping = grouping or "optimal"
    if proxy_name not in COST_MODELS:
        fail(f"Unknown cost proxy {proxy_name!r}. Valid names: {', '.join(COST_MODELS.names())}.")
    # A data-parallel schedule is selected on its rank rows (every rank's batch an
    # iteration of its own); `seqpoint project` reads it back the same way.
    sched = read_schedule(schedule).rank_rows()
    if n_points is not None and n_points > len(sched):
        fail(f"-k {n_points} exceeds the {len(sched)} iterations of {schedule}; choose k <= {len(sched)}.")
    params: dict[str, Any] = {"random_state": seed}
    if method == "seqpoint":
        params.update(n_points=n_points, max_error=max_error, cost=proxy_name, grouping=grouping)
    else:
        params["n_points"] = n_points
        if method == "stratified":
            params["cost"] = proxy_name
    selector = make_selector(method, **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SeqPointWarning)
        selector.fit(sched)
    if cost is not None:  # said once the input is checked, as the other deprecated flags
        err_console.print("seqpoint: warning: --cost is deprecated; use --proxy", markup=False, highlight=False)
    for w in caught:
        err_console.print(
            f"seqpoint: warning: {w.message}", markup=False, highlight=False, soft_wrap=True
        )
    points = selector.to_seqpoints(sched)
    write_seqpoints(points, output)
    written: list[str] = []
    if simpoints is not None:
        from seqpoint.selection import write_simpoints

        written = [str(w) for w in write_simpoints(points, simpoints)]
    if as_json:
        print_json({"output": str(output), "method": method, "n_points": len(points),
                    "n_iterations": points.n_iterations,
                    "estimated_error": points.meta.get("estimated_error"),
                    "calibrated_error": points.meta.get("calibrated_error"), "simpoints": written})
        return
    if written:
        console.print(f"wrote {', '.join(written)} (SimPoint format)", markup=False)
    print_selection(console, points, method=method)
    console.print(f"wrote {output}")
