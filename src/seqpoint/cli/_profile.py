"""``seqpoint profile``: measure the SeqPoints of SEQPOINTS.json on a workload; write MEASUREMENTS.json.

Exit status: 0 when the command ran (points that ran out of memory or failed are
recorded in MEASUREMENTS.json with their status, listed in the table and counted on
stderr); 2 on bad input (unknown workload, preset, setting or metric, a bad value, a
missing or malformed SEQPOINTS file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seqpoint._config import parse_set
from seqpoint.cli._app import app, console, err_console, fail
from seqpoint.reports import print_measurements

__all__ = ["profile"]


@app.command("profile")
def profile(
    seqpoints: Annotated[Path, typer.Argument(help="SEQPOINTS.json written by 'seqpoint select'.")],
    workload: Annotated[
        str,
        typer.Option(
            "--workload",
            "-w",
            help="NAME[:PRESET] (deepspeech2, gnmt, bert), path/to/file.py:function, or "
            "module:function with --allow-user-code (user code runs with your rights).",
        ),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="MEASUREMENTS.json to write.")],
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Workload setting KEY=VALUE, a TOML value or a bare word (dtype=bf16, threads=2, time_strides=[2,2] ...)."
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="time, flops, bytes, breakdown, memory, roofline:v100|a100|h100 (repeatable; default time).",
        ),
    ] = None,
    warmup: Annotated[int, typer.Option("--warmup", help="Untimed steps per point.")] = 2,
    repeats: Annotated[
        int, typer.Option("--repeats", help="Timed steps per point (median reported).")
    ] = 5,
    timer: Annotated[str, typer.Option("--timer", help="wall, cpu or cuda.")] = "wall",
    cache: Annotated[
        Path | None,
        typer.Option(
            "--cache", help="Measurement cache (default $SEQPOINT_CACHE or ~/.cache/seqpoint)."
        ),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Measure everything; read and write no cache.")
    ] = False,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")
    ] = True,
    allow_user_code: Annotated[
        bool,
        typer.Option(
            "--allow-user-code",
            help="Allow a --workload module:function, which imports and runs that module.",
        ),
    ] = False,
    kineto_dir: Annotated[
        Path | None,
        typer.Option("--kineto-dir", help="Write each SeqPoint's profiled step as a Kineto (chrome) "
                                          "trace here, with its weight in the metadata (for HTA, "
                                          "TensorBoard, Perfetto)."),
    ] = None,
) -> None:
    """Profile the SeqPoints on a workload and write MEASUREMENTS.json."""
    from seqpoint.cache import MeasurementCache
    from seqpoint.profiling import ProfileConfig, profile_points, write_measurements
    from seqpoint.selection import read_seqpoints
    from seqpoint.workloads import check_user_code, load_workload

    if cache is not None and no_cache:
        fail("--cache and --no-cache exclude each other; give one.")
    check_user_code(workload, allowed=allow_user_code)
    points = read_seqpoints(seqpoints)
    # The harness default, time only; a run config's [profile] records more by default.
    config = ProfileConfig(
        warmup=warmup, repeats=repeats, timer=timer, metrics=tuple(metric) if metric else ("time",),
        kineto_dir=None if kineto_dir is None else str(kineto_dir),
    )
    wl = load_workload(workload, parse_set(set_ or []))
    store = None if no_cache else MeasurementCache(cache)
    ms = profile_points(wl, points, config, cache=store, progress=progress, console=console)
    write_measurements(ms, output)

    print_measurements(console, points, ms)
    failed = [m for m in ms.measurements if not m.ok]
    if failed:
        err_console.print(
            f"seqpoint: warning: {len(failed)} of {len(ms.measurements)} points did not measure "
            f"({', '.join(sorted({m.status for m in failed}))}); they are recorded in {output} with "
            "their status and message.",
            markup=False,
            soft_wrap=True,
        )
    console.print(f"wrote {output}", markup=False)
