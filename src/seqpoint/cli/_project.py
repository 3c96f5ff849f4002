"""``seqpoint project``: whole-run totals from the SeqPoints' measurements."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seqpoint.cli._app import app, console
from seqpoint.cli._options import AsJson, QuietTables, print_json, print_warnings
from seqpoint.exceptions import InputError
from seqpoint.measurements import read_measurements
from seqpoint.projection import INTERCONNECTS, Projection, RankProjection
from seqpoint.reports import print_projection
from seqpoint.selection import read_seqpoints
from seqpoint.workflows import ProjectionSection

__all__ = ["project_command"]


@app.command("project")
def project_command(
    schedule: Annotated[Path, typer.Argument(help="SCHEDULE.csv or .parquet of the whole run.")],
    seqpoints: Annotated[Path, typer.Argument(help="SEQPOINTS.json from 'seqpoint select'.")],
    measurements: Annotated[Path, typer.Argument(help="MEASUREMENTS.json from 'seqpoint profile'.")],
    as_json: AsJson = False,
    quiet: QuietTables = False,
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
    # The flags are [projection]'s keys: the section checks them with the TOML's message.
    sec = ProjectionSection(method=method, interconnect=None if interconnect is None else _link(interconnect),
                            allreduce_s=allreduce_s)
    result, dp = _project_files(schedule, seqpoints, measurements, sec, gradient_bytes=gradient_bytes)
    if not result.complete:
        print_warnings([f"SeqPoint(s) at iteration(s) {', '.join(map(str, result.failed))} failed; "
                        "projected from the other points (result marked incomplete)."])
    if as_json:
        out = result.to_dict()
        if dp is not None:
            out["data_parallel"] = dp.to_dict()
        print_json(out)
        return
    if quiet:  # the one figure: the run's time (else its first total)
        from seqpoint.measurements.metrics import time_metric

        metric = time_metric(result.totals) if any(k.startswith(("run_", "time_s", "instructions"))
                                                   for k in result.totals) else next(iter(result.totals))
        console.print(f"{metric} {result.totals[metric]:.6g}", markup=False)
        return
    print_projection(console, result, dp)


def _project_files(schedule: Path, seqpoints: Path, measurements: Path, projection: ProjectionSection, *,
                   gradient_bytes: int | None) -> tuple[Projection, RankProjection | None]:
    """The run of three files projected (``[projection]``), and a data-parallel schedule's run with
    its all-reduce (``allreduce_s``, or ``interconnect`` with ``gradient_bytes``). InputError names
    the files that disagree, or what a data-parallel schedule lacks."""
    from seqpoint.projection import check_fit, project, project_ranks
    from seqpoint.schedule import read_schedule

    ranked = read_schedule(schedule)
    sched, points, meas = ranked.rank_rows(), read_seqpoints(seqpoints), read_measurements(measurements)
    check_fit(sched, points, meas, names=(str(schedule), str(seqpoints), str(measurements)))
    result = project(sched, points, meas, method=projection.method, confidence=projection.confidence)
    given = [k for k, v in (("--interconnect", projection.interconnect), ("--gradient-bytes", gradient_bytes),
                            ("--allreduce-s", projection.allreduce_s)) if v is not None]
    if ranked.world_size <= 1:
        if given:
            raise InputError(f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to data-parallel "
                             f"schedules (a rank column), and {schedule} has none: drop them, or write the schedule "
                             "with world_size > 1.")
        return result, None
    if projection.allreduce_s is None and (projection.interconnect is None or gradient_bytes is None):
        raise InputError(f"{schedule} is data-parallel ({ranked.world_size} ranks): give the all-reduce's measured "
                         "seconds (--allreduce-s) or its link (--interconnect NAME with --gradient-bytes N).")
    return result, project_ranks(ranked, points, meas, allreduce_s=projection.allreduce_s,
                                 gradient_bytes=gradient_bytes, interconnect=projection.interconnect)


def _link(value: str) -> str | float:
    """An interconnect name, or a bandwidth in bytes per second given as a number."""
    try:
        return float(value)
    except ValueError:
        return value
