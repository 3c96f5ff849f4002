"""``seqpoint project``: whole-run totals from the SeqPoints' measurements."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from seqpoint.cli._app import app, console, err_console, fail
from seqpoint.measurements import read_measurements
from seqpoint.projection import METHODS, project
from seqpoint.reports import print_projection
from seqpoint.schedule import read_schedule
from seqpoint.selection import read_seqpoints

__all__ = ["project_command"]


@app.command("project")
def project_command(
    schedule: Annotated[Path, typer.Argument(help="SCHEDULE.csv or .parquet of the whole run.")],
    seqpoints: Annotated[Path, typer.Argument(help="SEQPOINTS.json from 'seqpoint select'.")],
    measurements: Annotated[Path, typer.Argument(help="MEASUREMENTS.json from 'seqpoint profile'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    method: Annotated[
        str, typer.Option("--method", help="weighted (the paper's) or interpolated.")
    ] = "weighted",
) -> None:
    """Project run totals of every measured metric, with a 95% interval."""
    if method not in METHODS:
        fail(f"Unknown projection method {method!r}. Valid names: {', '.join(METHODS)}.")
    sched = read_schedule(schedule)
    points = read_seqpoints(seqpoints)
    meas = read_measurements(measurements)
    result = project(sched, points, meas, method=method)
    if not result.complete:
        err_console.print(
            f"seqpoint: warning: SeqPoint(s) at iteration(s) {', '.join(map(str, result.failed))} "
            "failed; projected from the other points (result marked incomplete).",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if as_json:
        print(json.dumps(result.to_dict()))
        return
    print_projection(console, result)
