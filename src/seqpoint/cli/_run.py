"""``seqpoint run | validate | speedup | demo``: the whole pipeline from one TOML config."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from seqpoint.cli._app import app, console
from seqpoint.cli._options import AsJson, Quiet, UserCode, print_json
from seqpoint.reports import (
    print_histogram,
    print_run,
    print_seqpoints,
    print_speedup,
    print_validation,
)
from seqpoint.workflows import (
    RunConfig,
    apply_overrides,
    load_config,
    run,
    run_demo,
    speedup_between,
    validate,
)
from seqpoint.workloads import check_user_code

__all__ = ["demo", "run_cmd", "speedup", "validate_cmd"]

_SET_HELP = "Override a config value: section.key=value (e.g. batching.epochs=2, workload.set.dtype=bf16)."



def _load(
    config: Path, overrides: list[str] | None, out: Path | None, *, allow_user_code: bool
) -> RunConfig:
    cfg = load_config(config)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    if out is not None:
        cfg = dataclasses.replace(cfg, report=dataclasses.replace(cfg.report, out=str(out)))
    check_user_code(cfg.workload.name, allowed=allow_user_code)
    return cfg


@app.command("run")
def run_cmd(
    config: Annotated[Path, typer.Argument(help="Run config TOML (see configs/).")],
    overrides: Annotated[list[str] | None, typer.Option("--set", help=_SET_HELP)] = None,
    out: Annotated[Path | None, typer.Option("-o", "--out", help="Run folder (default runs/NAME-TIME).")] = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    allow_user_code: UserCode = False,
) -> None:
    """Lengths → schedule → SeqPoints → profile (cached) → projected run, in a run folder."""
    cfg = _load(config, overrides, out, allow_user_code=allow_user_code)
    result = run(cfg, progress=not (quiet or as_json), console=console)
    if as_json:
        print_json(result)
        return
    print_histogram(console, result.schedule, result.seqpoints, unit=result.unit)
    print_seqpoints(console, result.seqpoints, result.measurements)
    print_run(console, result)
    console.print(f"Run folder: [bold]{result.folder.path}[/]")


@app.command("validate")
def validate_cmd(
    config: Annotated[Path, typer.Argument(help="Run config TOML; [validation] says what to run in full.")],
    overrides: Annotated[list[str] | None, typer.Option("--set", help=_SET_HELP)] = None,
    out: Annotated[Path | None, typer.Option("-o", "--out", help="Run folder.")] = None,
    no_exact: Annotated[bool, typer.Option("--no-exact", help="Skip exact FLOP totals.")] = False,
    as_json: AsJson = False,
    quiet: Quiet = False,
    allow_user_code: UserCode = False,
) -> None:
    """Run the schedule in full (twice), and compare the projection and baselines with it."""
    cfg = _load(config, overrides, out, allow_user_code=allow_user_code)
    result = validate(cfg, progress=not (quiet or as_json), console=console, exact=not no_exact)
    if as_json:
        print_json(result)
        return
    print_seqpoints(console, result.seqpoints, result.measurements)
    print_validation(console, result)
    console.print(f"Run folder: [bold]{result.folder.path}[/]")


@app.command("speedup")
def speedup(
    config_a: Annotated[Path, typer.Argument(help="Baseline configuration (TOML).")],
    config_b: Annotated[Path | None, typer.Argument(help="New configuration (TOML); "
                                                    "omit it and use --set-b to vary A.")] = None,
    set_b: Annotated[list[str] | None, typer.Option("--set-b", help="Overrides that turn A into B.")] = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    allow_user_code: UserCode = False,
) -> None:
    """Projected whole-run speedup of B over A, measured on the same SeqPoints."""
    a = _load(config_a, None, None, allow_user_code=allow_user_code)
    b = _load(config_b, None, None, allow_user_code=allow_user_code) if config_b else a
    if set_b:
        check_user_code(
            apply_overrides(b, set_b, option="--set-b").workload.name, allowed=allow_user_code
        )
    result = speedup_between(config_a, config_b, set_b or [], progress=not (quiet or as_json),
                             console=console)
    if as_json:
        print_json(result)
        return
    print_speedup(console, result.speedup, n_points=len(result.seqpoints))


@app.command("demo")
def demo(
    out: Annotated[Path | None, typer.Option("-o", "--out", help="Folder for the demo's runs.")] = None,
    quiet: Quiet = False,
) -> None:
    """The bundled default: DeepSpeech2-tiny on LibriSpeech, projected and validated (CPU, minutes)."""
    raise typer.Exit(run_demo(console, out=out, progress=not quiet))
