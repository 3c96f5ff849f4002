"""``seqpoint sweep``: many configurations on one run's SeqPoints, serially or on Ray."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seqpoint import workflows  # called through the module: tests stand in for a workflow there
from seqpoint.cli._app import app, console
from seqpoint.cli._options import (
    Address,
    AsJson,
    ExecutorName,
    Quiet,
    RunFolder,
    UserCode,
    print_result,
    reporter,
)
from seqpoint.reports import print_sweep
from seqpoint.workflows import load_sweep
from seqpoint.workloads import check_user_code

__all__ = ["sweep_cmd"]


@app.command("sweep")
def sweep_cmd(
    sweep_file: Annotated[Path, typer.Argument(help="Sweep TOML: a base run config and a grid "
                                                    "of overrides (see configs/sweep-*.toml).")],
    executor: ExecutorName = None,
    address: Address = None,
    num_cpus: Annotated[int | None, typer.Option(
        "--num-cpus", min=1, help="CPUs of the local Ray (default: all).")] = None,
    output: RunFolder = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    allow_user_code: UserCode = False,
) -> None:
    """Profile every configuration of a sweep on shared SeqPoints; print the speedup matrix."""
    # Every configuration's workload is checked before anything is built or measured.
    spec = load_sweep(sweep_file)
    for entry in spec.configurations:
        check_user_code(entry.config.workload.name, allowed=allow_user_code)
    name = executor or ("ray" if address is not None else None)
    result = workflows.sweep(spec, name, address=address, num_cpus=num_cpus, out=output,
                             reporter=reporter(quiet, as_json))
    print_result(result, as_json, lambda: print_sweep(console, result), lambda: result.folder.path)
