"""``seqpoint project``: whole-run totals from the SeqPoints' measurements."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seqpoint.cli._app import app, console, fail
from seqpoint.cli._options import AsJson, Quiet, print_json, print_warnings
from seqpoint.measurements import read_measurements
from seqpoint.projection import INTERCONNECTS, project, project_ranks
from seqpoint.projection._match import match_measurements, seqpoint_rows
from seqpoint.reports._ranks import print_rank_projection
from seqpoint.reports._terminal import print_projection
from seqpoint.schedule import read_schedule
from seqpoint.selection import read_seqpoints

__all__ = ["project_command"]


@app.command("project")
def project_command(
    schedule: Annotated[Path, typer.Argument(help="SCHEDULE.csv or .parquet of the whole run.")],
    seqpoints: Annotated[Path, typer.Argument(help="SEQPOINTS.json from 'seqpoint select'.")],
    measurements: Annotated[Path, typer.Argument(help="MEASUREMENTS.json from 'seqpoint profile'.")],
    as_json: AsJson = False,
    quiet: Quiet = False,
    method: Annotated[str, typer.Option("--method", help="weighted (the paper's) or interpolated.")] = "weighted",
    interconnect: Annotated[str | None, typer.Option(
        "--interconnect", help="Data-parallel schedules: the all-reduce's link, a name "
        f"({', '.join(INTERCONNECTS)}) or bytes per second; needs --gradient-bytes.")] = None,
    gradient_bytes: Annotated[int | None, typer.Option(
        "--gradient-bytes", min=1, help="Data-parallel schedules: bytes of the gradients "
        "(4 x parameters in fp32).")] = None,
    allreduce_s: Annotated[float | None, typer.Option(
        "--allreduce-s", min=0.0, help="Data-parallel schedules: a measured all-reduce, "
        "seconds per step (in place of --interconnect).")] = None,
) -> None:
    """Project run totals of every measured metric, with a 95% interval.

    A data-parallel schedule (a ``rank`` column) also gets its run time: each step its
    slowest rank plus the gradient all-reduce (--interconnect with --gradient-bytes, or
    --allreduce-s), with the straggler and communication shares.
    """
    from seqpoint.workflows import ProjectionSection

    # The flags are [projection]'s keys: the section checks them with the TOML's message.
    sec = ProjectionSection(method=method, interconnect=None if interconnect is None else _link(interconnect),
                            allreduce_s=allreduce_s)
    ranked = read_schedule(schedule)
    sched = ranked.rank_rows()
    points = read_seqpoints(seqpoints)
    meas = read_measurements(measurements)
    # Which files disagree, said before projecting.
    seqpoint_rows(sched, points, context=f"{seqpoints} does not fit {schedule}")
    match_measurements(points, meas, context=f"{measurements} does not fit {seqpoints}")
    result = project(sched, points, meas, method=sec.method, confidence=sec.confidence)
    dp = None
    given = [flag for flag, v in (("--interconnect", interconnect), ("--gradient-bytes", gradient_bytes),
                                  ("--allreduce-s", allreduce_s)) if v is not None]
    if given and ranked.world_size <= 1:
        fail(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to data-parallel schedules "
             f"(a rank column), and {schedule} has none: drop them, or write the schedule with world_size > 1.")
    if ranked.world_size > 1:
        if allreduce_s is None and (interconnect is None or gradient_bytes is None):
            fail(f"{schedule} is data-parallel ({ranked.world_size} ranks): give --allreduce-s "
                 "(measured) or --interconnect NAME with --gradient-bytes N for the all-reduce.")
        dp = project_ranks(ranked, points, meas, allreduce_s=sec.allreduce_s,
                           gradient_bytes=gradient_bytes, interconnect=sec.interconnect)
    if not result.complete:
        print_warnings([f"SeqPoint(s) at iteration(s) {', '.join(map(str, result.failed))} failed; "
                        "projected from the other points (result marked incomplete)."])
    if as_json:
        out = result.to_dict()
        if dp is not None:
            out["data_parallel"] = dp.to_dict()
        print_json(out)
        return
    print_projection(console, result)
    if dp is not None:
        print_rank_projection(console, dp)


def _link(value: str) -> str | float:
    """An interconnect name, or a bandwidth in bytes per second given as a number."""
    try:
        return float(value)
    except ValueError:
        return value
