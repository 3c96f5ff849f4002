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
from rich.table import Table

from seqpoint.cli._app import app, console, err_console

__all__ = ["profile"]


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value * 1e3:.3f} ms" if value < 1 else f"{value:.3f} s"
    for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.2f}{suffix}{unit}"
    return f"{value:g}{unit}"


@app.command("profile")
def profile(
    seqpoints: Annotated[Path, typer.Argument(help="SEQPOINTS.json written by 'seqpoint select'.")],
    workload: Annotated[
        str,
        typer.Option(
            "--workload", "-w", help="NAME[:PRESET] (deepspeech2, gnmt, bert) or module:function."
        ),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="MEASUREMENTS.json to write.")],
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Workload setting KEY=VALUE (dtype=bf16, threads=2, micro_batches=2 ...)."
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
) -> None:
    """Profile the SeqPoints on a workload and write MEASUREMENTS.json."""
    from seqpoint.cache import MeasurementCache
    from seqpoint.profiling import ProfileConfig, profile_points, write_measurements
    from seqpoint.selection import read_seqpoints
    from seqpoint.workloads import load_workload, parse_set

    if cache is not None and no_cache:
        from seqpoint.cli._app import fail

        fail("--cache and --no-cache exclude each other; give one.")
    points = read_seqpoints(seqpoints)
    config = ProfileConfig(
        warmup=warmup, repeats=repeats, timer=timer, metrics=tuple(metric) if metric else ("time",)
    )
    wl = load_workload(workload, parse_set(set_ or []))
    store = None if no_cache else MeasurementCache(cache)
    ms = profile_points(wl, points, config, cache=store, progress=progress, console=console)
    write_measurements(ms, output)

    table = Table(title=f"{ms.workload}: {len(ms.measurements)} points")
    for col in (
        "iteration",
        "batch",
        "seq_len",
        "tgt_len",
        "weight",
        "status",
        "time",
        "± IQR",
        "FLOPs",
    ):
        table.add_column(col, justify="right" if col != "status" else "left")
    for p, m in zip(points.points, ms.measurements, strict=True):
        table.add_row(
            str(m.iteration),
            str(m.batch_size),
            str(m.seq_len),
            str(m.tgt_len),
            f"{p.weight:g}",
            m.status if m.ok else f"{m.status}: {m.message[:60]}",
            _fmt(m.metrics.get("time_s"), "s"),
            _fmt(m.metrics.get("time_s_iqr"), "s"),
            _fmt(m.metrics.get("flops")),
        )
    console.print(table)
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
