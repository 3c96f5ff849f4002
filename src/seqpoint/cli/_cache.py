"""``seqpoint cache list | clear | export``: inspect and manage the measurement cache."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Annotated

import typer

from seqpoint.cache import MeasurementCache
from seqpoint.cli._app import TYPER_OPTIONS, app, console
from seqpoint.cli._options import AsJson, QuietTables, print_json
from seqpoint.reports import render

__all__ = ["cache_app"]

cache_app = typer.Typer(name="cache", help="Inspect or manage the measurement cache ($SEQPOINT_CACHE or "
                        "~/.cache/seqpoint).", **TYPER_OPTIONS)
app.add_typer(cache_app, name="cache")

_CachePath = Annotated[Path | None, typer.Option(
    "--cache", help="Cache file (default $SEQPOINT_CACHE or ~/.cache/seqpoint).")]
_Workload = Annotated[str | None, typer.Option("--workload", "-w", help="Only this workload's rows (NAME:PRESET).")]


@cache_app.command("list")
def cache_list(cache: _CachePath = None, workload: _Workload = None, as_json: AsJson = False,
               quiet: QuietTables = False) -> None:
    """List cached measurements."""
    store = MeasurementCache(cache)
    rows = store.list(workload)
    if as_json:
        print_json({"cache": str(store.path), "measurements": [
            {"workload": e.workload, "signature": list(e.signature), "status": e.status,
             "time_s": e.measurement.metrics.get("time_s"), "created": e.created, "key": e.key} for e in rows]})
        return
    if not quiet:
        table = [["workload", "signature", "status", "time_s", "written", "key"]]
        for e in rows:
            t = e.measurement.metrics.get("time_s")
            table.append([e.workload, ",".join(map(str, e.signature)), e.status, "-" if t is None else f"{t:.6g}",
                          _dt.datetime.fromtimestamp(e.created).strftime("%Y-%m-%d %H:%M:%S"), e.key[:12]])
        console.print(render(table, title="measurement cache", left=6))
    console.print(f"{len(rows)} measurements in {store.path}", markup=False, soft_wrap=True)


@cache_app.command("clear")
def cache_clear(cache: _CachePath = None, workload: _Workload = None, as_json: AsJson = False,
                quiet: QuietTables = False) -> None:
    """Delete cached measurements (all, or one workload's)."""
    store = MeasurementCache(cache)
    n = store.clear(workload)
    if as_json:
        print_json({"cache": str(store.path), "deleted": n})
    elif not quiet:
        console.print(f"deleted {n} measurements from {store.path}", markup=False)


@cache_app.command("export")
def cache_export(
    output: Annotated[Path, typer.Option("-o", "--output", help="JSON file to write.")],
    cache: _CachePath = None,
    workload: _Workload = None,
    as_json: AsJson = False,
    quiet: QuietTables = False,
) -> None:
    """Export cached measurements as JSON."""
    store = MeasurementCache(cache)
    path = store.export(output, workload)
    n = len(store.list(workload))
    if as_json:
        print_json({"output": str(path), "n_measurements": n})
    elif not quiet:
        console.print(f"wrote {n} measurements to {path}", markup=False)
