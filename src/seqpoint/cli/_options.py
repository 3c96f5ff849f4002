"""Options several commands share, declared once, and the old spellings they replace
(``--out``, ``--no-progress``, a bare ``--set KEY=VALUE``): these still work and are warned
about in one stderr line once the input is checked, so bad input stays one error line."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Protocol

import typer

from seqpoint._config import parse_set
from seqpoint.cli._app import console, err_console
from seqpoint.exceptions import ConfigError

__all__ = ["AsJson", "OldOut", "Quiet", "RunFolder", "Sets", "UserCode", "deprecated",
           "lay_sets", "pick_output", "print_json", "print_result", "print_warnings"]

AsJson = Annotated[bool, typer.Option("--json", help="Print the result as one JSON object on stdout, "
                                                     "and nothing else there.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")]
UserCode = Annotated[bool, typer.Option("--allow-user-code", help=(
    "Allow a [workload] name of module:function, which imports and runs that module with "
    "your rights (a path/to/file.py:function is allowed without it)."))]
RunFolder = Annotated[Path | None, typer.Option(
    "-o", "--output", help="Run folder ([report] out; default runs/NAME-TIME).")]
#: ``-o``'s old long name on the commands that write a run folder.
OldOut = Annotated[Path | None, typer.Option("--out", hidden=True, help="Deprecated: use -o/--output.")]
#: ``--set`` of the commands that read a run config (run, validate).
Sets = Annotated[list[str] | None, typer.Option("--set", help="Override a config value: section.key=value "
                                                "(e.g. batching.epochs=2, workload.set.dtype=bf16).")]


def deprecated(old: str, new: str) -> str:
    """The one wording of a deprecation: ``--out is deprecated; use -o/--output``."""
    return f"{old} is deprecated; use {new}"


def print_warnings(notes: Iterable[object]) -> None:
    """One stderr line per warning; an old spelling's is printed once the input is checked."""
    for note in notes:
        err_console.print(f"seqpoint: warning: {note}", markup=False, highlight=False, soft_wrap=True)


def pick_output(output: Path | None, out: Path | None) -> tuple[Path | None, list[str]]:
    """``-o/--output``, or the hidden old ``--out`` (with its deprecation note)."""
    if out is None:
        return output, []
    if output is not None:
        raise ConfigError("--out is the old name of -o/--output; give -o/--output once.")
    return out, [deprecated("--out", "-o/--output")]


def lay_sets(data: dict[str, dict[str, Any]], items: Iterable[str] | None, *, bare: str,
             command: str) -> list[str]:
    """Lay ``--set section.key=value`` items over ``data`` (the run config's sections as the
    command's flags fill them, TOML-shaped) and return the deprecation notes. The caller
    builds the sections from ``data``, so a value gets the TOML's own check and message; an
    old bare ``KEY=VALUE`` goes to ``bare.KEY``, with a note. ``command`` names the command
    in errors.
    """
    notes = []
    for item in items or ():
        key, sep, _ = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects section.key=value, as in a run config (e.g. --set "
                              f"{bare}.KEY=VALUE). Got {item!r}.")
        if "." not in key:
            notes.append(deprecated(f"--set {item}", f"--set {bare}.{item.strip()}"))
            item = f"{bare}.{item.strip()}"
        ((dotted, value),) = parse_set([item]).items()
        *parents, leaf = dotted.split(".")
        node: object = data
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or not leaf or (len(parents) == 1 and leaf not in node):
            keys = [f"{s}.{k}{'.KEY' if isinstance(v, dict) else ''}" for s, sec in data.items()
                    for k, v in sec.items()]
            raise ConfigError(f"--set {item!r}: seqpoint {command} takes the keys {', '.join(keys)} "
                              "(section.key=value, as in a run config).")
        node[leaf] = value
    return notes


class _HasDict(Protocol):
    def to_dict(self) -> dict[str, object]: ...


def print_json(result: dict[str, object] | _HasDict) -> None:
    """A result (a dict, or an object's ``to_dict()``) as indented JSON on stdout: what
    ``--json`` prints."""
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
