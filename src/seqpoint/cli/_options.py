"""Options several commands share, declared once."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Protocol

import typer

from seqpoint._live import Reporter
from seqpoint.cli._app import console, err_console
from seqpoint.exceptions import ConfigError
from seqpoint.workflows import RunConfig

__all__ = ["Address", "AsJson", "ExecutorName", "Quiet", "QuietTables", "RunFolder", "Sets", "UserCode",
           "print_json", "print_result", "print_warnings", "reporter", "with_executor", "with_sets"]

AsJson = Annotated[bool, typer.Option("--json", help="Print the result as one JSON object on stdout, "
                                                     "and nothing else there.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or notes.")]
#: ``-q`` of a command that draws no progress: it prints what it wrote and nothing more.
QuietTables = Annotated[bool, typer.Option("--quiet", "-q", help="No tables: print only what was written.")]
ExecutorName = Annotated[str | None, typer.Option(
    "--executor", help="Where the points are measured: local (this machine), ray, or submitit (Slurm jobs; "
                       "local subprocesses without Slurm); default [profile] executor.")]
Address = Annotated[str | None, typer.Option(
    "--address", help="Ray cluster address (host:port, ray://host:port or auto); implies --executor ray.")]
UserCode = Annotated[bool, typer.Option("--allow-user-code", help=(
    "Allow a [workload] name of module:function, which imports and runs that module with "
    "your rights (a path/to/file.py:function is allowed without it)."))]
RunFolder = Annotated[Path | None, typer.Option(
    "-o", "--output", help="Run folder ([report] out; default runs/NAME-TIME).")]
#: ``--set`` of the commands that read a run config (run, validate).
Sets = Annotated[list[str] | None, typer.Option("--set", help="Override a config value: section.key=value "
                                                "(e.g. batching.epochs=2, workload.set.dtype=bf16).")]


def print_warnings(notes: Iterable[object]) -> None:
    """One stderr line per warning."""
    for note in notes:
        err_console.print(f"seqpoint: warning: {note}", markup=False, highlight=False, soft_wrap=True)


def with_sets(cfg: RunConfig, items: Iterable[str] | None, *, sections: tuple[str, ...], bare: str,
              command: str, given: tuple[str, ...] = ()) -> RunConfig:
    """``cfg`` (the run config as the command's flags fill it) with ``--set section.key=value``
    laid over it, checked as a TOML file is; ``command`` takes the keys of ``sections`` only (a
    key of another section would be accepted and not used), but not the keys its arguments give
    (``given``); ``bare`` is the section.key an error's example names."""
    from seqpoint.workflows import apply_overrides

    dotted = []
    for item in items or ():
        key, sep, _ = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects section.key=value, as in a run config (e.g. --set "
                              f"{bare}.KEY=VALUE). Got {item!r}.")
        if "." not in key or not all(part.strip() for part in key.split(".")):
            raise ConfigError(f"--set {item!r} must look like section.key=value (e.g. --set {bare}.KEY=VALUE).")
        if item.split(".", 1)[0].strip() not in sections or key.strip() in given:
            but = f" but {', '.join(given)}, which its arguments give" if given else ""
            raise ConfigError(f"--set {item!r}: seqpoint {command} takes the keys of "
                              f"{', '.join(f'[{s}]' for s in sections)}{but} (section.key=value, as in a run config).")
        dotted.append(item)
    return apply_overrides(cfg, dotted) if dotted else cfg


def with_executor(cfg: RunConfig, executor: str | None, address: str | None) -> RunConfig:
    """``cfg`` with ``--executor`` and ``--address`` as its ``[profile] executor`` and ``address``
    (an address alone means Ray), checked as the TOML's keys are."""
    if executor is None and address is None:
        return cfg
    name = executor or ("ray" if address is not None else cfg.profile.executor)
    profile = dataclasses.replace(cfg.profile, executor=name, address=address if address is not None else (
        cfg.profile.address if name == "ray" else None))
    return dataclasses.replace(cfg, profile=profile)


class _HasDict(Protocol):
    def to_dict(self) -> dict[str, object]: ...


def reporter(quiet: bool, as_json: bool = False) -> Reporter:
    """Progress bars and notes on the command line's console, off with ``-q`` or ``--json``."""
    return Reporter(console=console, progress=not (quiet or as_json))


def print_json(result: dict[str, object] | _HasDict) -> None:
    """A result (a dict, or an object's ``to_dict()``) as indented JSON on stdout: what ``--json`` prints."""
    data = result if isinstance(result, dict) else result.to_dict()
    print(json.dumps(data, indent=2, default=str))


def print_result(result: dict[str, object] | _HasDict, as_json: bool, show: Callable[[], object],
                 folder: Callable[[], object] | None = None) -> None:
    """What a command prints: with ``--json`` the result as JSON, else its tables (``show()``)
    and the run folder it wrote (``folder()``), if any."""
    if as_json:
        print_json(result)
        return
    show()
    if folder is not None:
        console.print(f"Run folder: [bold]{folder()}[/]")
