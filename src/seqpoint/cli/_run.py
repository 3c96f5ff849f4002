"""``seqpoint run | validate | speedup | demo``: the whole pipeline from one TOML config."""

from __future__ import annotations

import dataclasses
import warnings
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
    Sets,
    UserCode,
    print_result,
    reporter,
    with_executor,
)
from seqpoint.exceptions import ConfigError, SeqPointWarning
from seqpoint.reports import print_run, print_speedup, print_trace_validation, print_validation
from seqpoint.selection import read_seqpoints
from seqpoint.workflows import RunConfig, apply_overrides, demo_configs, load_config
from seqpoint.workloads import check_user_code

__all__ = ["demo", "run_cmd", "speedup", "validate_cmd"]


def _load(config: Path, overrides: list[str] | None, output: Path | None, *, allow_user_code: bool,
          executor: str | None = None, address: str | None = None) -> RunConfig:
    """The config with its --set overrides, --executor/--address and -o/--output ([report] out)."""
    cfg = load_config(config)
    if overrides:
        cfg = apply_overrides(cfg, overrides)
    cfg = with_executor(cfg, executor, address)
    if output is not None:
        cfg = dataclasses.replace(cfg, report=dataclasses.replace(cfg.report, out=str(output)))
    check_user_code(cfg.workload.name, allowed=allow_user_code)
    return cfg


@app.command("run")
def run_cmd(
    config: Annotated[Path, typer.Argument(help="Run config TOML (see configs/).")],
    overrides: Sets = None,
    output: RunFolder = None,
    executor: ExecutorName = None,
    address: Address = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    allow_user_code: UserCode = False,
    mlflow: Annotated[bool, typer.Option("--mlflow", help="Also log the projection, breakdown and "
                                         "run folder to MLflow (needs seqpoint[mlflow]).")] = False,
) -> None:
    """Lengths → schedule → SeqPoints → profile (cached) → projected run, in a run folder."""
    cfg = _load(config, overrides, output, allow_user_code=allow_user_code, executor=executor, address=address)
    for item in overrides or ():
        if item.split(".", 1)[0].strip() == "validation":
            warnings.warn(f"--set {item!r}: [validation] is read by seqpoint validate, not by run; here it "
                          "only goes into the run folder's config.toml.", SeqPointWarning, stacklevel=1)
    result = workflows.run(cfg, reporter=reporter(quiet, as_json), log_mlflow=mlflow)

    print_result(result, as_json, lambda: print_run(console, result), lambda: result.folder.path)


@app.command("validate")
def validate_cmd(
    config: Annotated[Path, typer.Argument(help="Run config TOML; [validation] says what to run in full.")],
    overrides: Sets = None,
    output: RunFolder = None,
    no_exact: Annotated[bool, typer.Option("--no-exact", help="Skip exact FLOP totals.")] = False,
    executor: ExecutorName = None,
    address: Address = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    allow_user_code: UserCode = False,
    trace: Annotated[list[Path] | None, typer.Option(
        "--trace", help="A recorded run (run trace from SeqPointCallback, seqpoint.integrations.record "
                        "or lhotse) as the truth instead of full runs; its micro-batches are the "
                        "schedule. Give it twice (two runs of the same schedule) for the noise floor.")] = None,
    first_n: Annotated[int | None, typer.Option("--first-n", min=1, help="--trace: steps the first-N "
                                                "estimate (today's practice) averages (default 10).")] = None,
) -> None:
    """Run the schedule in full (twice), and compare the projection and baselines with it;
    or, with --trace, compare the projection and first-N with your own recorded runs
    ([selection], [workload], [profile] with cold_window, [report] out and [batching] rank
    are read; a config that sets [lengths], [batching] or [validation] keys is refused)."""
    if trace and no_exact:
        raise ConfigError("--no-exact skips the exact FLOP totals of a validation by full runs; --trace "
                          "computes none. Leave out --no-exact.")
    if first_n is not None and not trace:
        raise ConfigError("--first-n sets the first-N estimate of a recorded run, read with --trace only; "
                          "leave it out or add --trace.")
    cfg = _load(config, overrides, output, allow_user_code=allow_user_code, executor=executor, address=address)
    if trace:
        checked = workflows.validate(cfg, traces=[str(t) for t in trace], first_n=10 if first_n is None else first_n,
                                     reporter=reporter(quiet, as_json))
        print_result(checked, as_json, lambda: print_trace_validation(console, checked),
                     lambda: None if checked.folder is None else checked.folder.path)
        return
    result = workflows.validate(cfg, reporter=reporter(quiet, as_json), exact=not no_exact)

    print_result(result, as_json, lambda: print_validation(console, result), lambda: result.folder.path)


@app.command("speedup")
def speedup(
    config_a: Annotated[Path | None, typer.Argument(help="Baseline configuration (TOML).")] = None,
    config_b: Annotated[Path | None, typer.Argument(help="New configuration (TOML); "
                                                    "omit it and use --set-b to vary A.")] = None,
    set_a: Annotated[list[str] | None, typer.Option(
        "--set", help="Overrides of A (section.key=value, as for run); B, when it is A with --set-b, gets them too.")] = None,
    set_b: Annotated[list[str] | None, typer.Option("--set-b", help="Overrides that turn A into B.")] = None,
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="A's run folder, where the speedup is written ([report] out of A; "
                               "default runs/NAME-TIME).")] = None,
    executor: ExecutorName = None,
    address: Address = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    allow_user_code: UserCode = False,
    files: Annotated[tuple[Path, Path, Path, Path] | None, typer.Option(
        "--files", help="SCHEDULE SEQPOINTS MEASUREMENTS_A MEASUREMENTS_B: the speedup from two "
                        "measurement files of the same SeqPoints (no config, nothing measured); "
                        "SCHEDULE may be a run trace.")] = None,
    check: Annotated[bool, typer.Option(
        "--validate", help="Project on A's [validation] part of the run, then run that part in full "
                           "under A and B ([validation] runs rounds, alternating, fresh processes) "
                           "and print the measured speedup and the projection's error.")] = False,
) -> None:
    """Projected whole-run speedup of B over A, measured on the same SeqPoints.

    With [profile] processes > 1 in both, A's and B's worker processes take
    turns (A1 B1 B2 A2 ...), so a drift of the machine's speed reaches both.
    """
    if files is not None:
        if config_a is not None or config_b is not None or set_b or set_a or output is not None:
            raise ConfigError("--files takes the place of CONFIG_A, CONFIG_B, --set, --set-b and "
                              "-o/--output (it writes no run folder); give one or the other.")
        if check:
            raise ConfigError("--validate runs both configurations in full and needs CONFIG_A; "
                              "--files measures nothing. Give one or the other.")
        sp = workflows.speedup_from_files(*files)
        print_result(sp, as_json, lambda: print_speedup(console, sp, n_points=len(read_seqpoints(files[1]))))
        return
    if config_a is None:
        raise ConfigError("Give a baseline CONFIG_A (and CONFIG_B or --set-b), or --files SCHEDULE "
                          "SEQPOINTS MEASUREMENTS_A MEASUREMENTS_B.")
    if config_b is None and not set_b:
        raise ConfigError("Give a second config B, or --set-b overrides that turn A into B.")
    for item in set_b or ():
        # Refused rather than accepted and not used (the run's part and rounds, the folder).
        if item.split(".", 1)[0].strip() in ("validation", "report"):
            raise ConfigError(f"--set-b {item!r}: a speedup takes its [validation] and [report] settings from A, "
                              "so an override of them on B would not be used; set it in A's config file.")
    a = _load(config_a, set_a, output, allow_user_code=allow_user_code)  # -o/--output: A's [report] out
    b = _load(config_b, None, None, allow_user_code=allow_user_code) if config_b else a
    if set_b:
        b = apply_overrides(b, set_b, option="--set-b")
        check_user_code(b.workload.name, allowed=allow_user_code)
    from seqpoint.executors import make_executor

    measured_on = None  # both configurations on the one executor given, else each on its [profile]'s
    if executor is not None or address is not None:
        measured_on = make_executor(executor or "ray", address=address)
    result = workflows.speedup(a, b, validate=check, reporter=reporter(quiet, as_json), executor=measured_on)
    print_result(result, as_json, lambda: print_speedup(console, result.speedup, n_points=len(result.seqpoints),
                                                        measured=result.measured), lambda: result.folder.path)


@app.command("demo")
def demo(
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Folder for the demo's runs.")] = None,
    quiet: Quiet = False,
) -> None:
    """The bundled default: DeepSpeech2-tiny on LibriSpeech, projected and validated (CPU, minutes)."""
    root = output or workflows.RunFolder.new("demo").path
    whole, subset = demo_configs(root)
    console.rule("[bold]seqpoint demo")
    console.print(
        "DeepSpeech2-style model ([bold]deepspeech2:tiny[/], CPU, 1 thread) on LibriSpeech "
        "train-clean-100 (28,539 utterances, 10 ms frames), SortaGrad then shuffled epochs, "
        "batch 32, 10 epochs. The SeqPoints are timed in 3 fresh worker processes, in turn, "
        "with a drift check.\n"
    )
    result = workflows.run(whole, reporter=reporter(quiet))
    print_run(console, result)
    console.rule("[bold]Is it right? A measured full run of a small subset")
    console.print(
        "3,000 random utterances, batch 16, 2 epochs (SortaGrad + shuffled): every iteration "
        "is trained, twice, and compared with the projection from 10 SeqPoints and with "
        "today's practice (first-N, random-N, mean/median length, SimPoint-style, stratified).\n"
    )
    check = workflows.validate(subset, reporter=reporter(quiet))
    print_validation(console, check, seqpoints=False)
    console.print(f"\nReports: [bold]{result.folder.path / 'report.html'}[/] and "
                  f"[bold]{check.folder.path / 'report.html'}[/]")
