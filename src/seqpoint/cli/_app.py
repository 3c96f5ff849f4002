"""The typer application and the one error policy of the command line.

Every command module registers itself on :data:`app`. :func:`main` runs it and keeps
the error policy of the command-line contract:

- a user-caused error (bad flag, bad file, an output that cannot be written) is one
  line on stderr and exit status 2;
- anything else is a bug: one line naming the file the traceback was written to,
  exit status 1, never a raw traceback;
- Ctrl-C is exit status 130, and finished measurements stay in the cache;
- a warning is one line on stderr too, not Python's two (the second quoting seqpoint's
  own source line).
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
import typer
from rich.console import Console
from typer import _click as typer_click

from seqpoint.cache import default_cache_path
from seqpoint.exceptions import SeqPointError, SeqPointWarning

__all__ = ["TYPER_OPTIONS", "app", "console", "err_console", "fail", "main"]

#: The options of the app and of its command groups (``seqpoint cache``).
TYPER_OPTIONS: dict[str, Any] = {"add_completion": False, "no_args_is_help": True, "rich_markup_mode": None}
app = typer.Typer(name="seqpoint", help="Project whole-run training time of sequence models from a few "
                  "SeqPoints.", pretty_exceptions_enable=False, **TYPER_OPTIONS)

#: Tables and progress go to stdout; errors and warnings to stderr.
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

# typer 0.29 vendors its own click (``typer._click``) and raises its exceptions, not the
# separate ``click`` package's; catch both so a typer upgrade or downgrade cannot turn a
# usage error back into a traceback.
_CLICK_ERRORS = (typer_click.exceptions.ClickException, click.exceptions.ClickException)
_NO_ARGS = (typer_click.exceptions.NoArgsIsHelpError, click.exceptions.NoArgsIsHelpError)
_ABORT = (typer.Abort, click.exceptions.Abort, KeyboardInterrupt)
# A point is kept once measured to its end: with [profile] processes > 1, by its last worker.
_INTERRUPTED = "seqpoint: interrupted; points measured to the end are kept in the cache."


def _one_line(text: str) -> str:
    """Collapse a message onto one line: the contract is one stderr line per error."""
    return " ".join(str(text).split())


def fail(message: str) -> None:
    """Print one error line and exit with status 2."""
    err_console.print(f"seqpoint: error: {_one_line(message)}", markup=False, highlight=False, soft_wrap=True)
    raise SystemExit(2)


#: Flags since renamed or dropped, and what to give instead.
_OLD_FLAGS = {"--out": "use -o/--output", "--cost": "use --proxy", "--no-progress": "use -q/--quiet",
              "--progress": "drop it: progress shows unless -q/--quiet"}


def _usage_message(exc: Exception) -> str:
    ctx = getattr(exc, "ctx", None)
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    if (old := getattr(exc, "option_name", None)) in _OLD_FLAGS:
        message = f"No such option: {old}; {_OLD_FLAGS[old]}"
    if getattr(exc, "exit_code", 2) != 2 and ctx is None:
        return message
    name = ctx.command_path if ctx is not None else "seqpoint"
    message = message.rstrip()
    if not message.endswith((".", ")")):
        message += "."
    return f"{message} Run '{name} --help'."


_OS_MESSAGES: dict[type[OSError], str] = {
    FileNotFoundError: "{}: no such file or folder; check the path.",
    IsADirectoryError: "{} is a folder; give a file.",
    NotADirectoryError: "{}: a part of this path is a file, not a folder; choose another path.",
    FileExistsError: "{} exists and is not a folder; remove it or choose another path.",
    PermissionError: "{}: permission denied; choose a writable location.",
}


def _os_message(exc: OSError) -> str:
    """Name the path and the fix of an ``OSError``; outputs are the usual cause."""
    path = exc.filename if exc.filename is not None else "output"
    for kind, text in _OS_MESSAGES.items():
        if isinstance(exc, kind):
            return text.format(path)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"{path}: no space left on the device; free space or choose another location."
    reason = exc.strerror or str(exc)
    return f"{path}: cannot read or write ({reason}); check the path or choose another location."


def _report_internal_error(exc: BaseException) -> None:
    """One line for a bug, with the full traceback in a file the user can attach."""
    text = "".join(traceback.format_exception(exc))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    where = "nowhere (no writable folder)"
    # Beside the cache when it is writable, else the system's temporary folder.
    for folder in (default_cache_path().parent / "crashes", Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f"seqpoint-crash-{stamp}-", suffix=".txt", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            where = name
            break
        except OSError:
            continue
    message = _one_line(f"seqpoint: internal error: {type(exc).__name__}: {exc} "
                        f"(traceback written to {where}; please report it)")
    err_console.print(message, markup=False, highlight=False, soft_wrap=True)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: object = None, line: str | None = None) -> None:
    """``warnings.showwarning`` of the command line: one stderr line per warning. seqpoint's
    own name their class; another library's also say where they come from."""
    if issubclass(category, SeqPointWarning):
        text = f"seqpoint: warning: {message} ({category.__name__})"
    else:
        text = f"seqpoint: warning from {filename}:{lineno}: {category.__name__}: {message}"
    err_console.print(_one_line(text), markup=False, highlight=False, soft_wrap=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point: run the app, each exception mapped to its exit status and
    one line (the error policy above)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            rv = app(args=args, prog_name="seqpoint", standalone_mode=False)
    except _NO_ARGS as exc:
        err_console.print(exc.format_message(), markup=False, highlight=False)  # type: ignore[attr-defined]
        raise SystemExit(2) from None
    except _CLICK_ERRORS as exc:
        fail(_usage_message(exc))
    except _ABORT:
        err_console.print(_INTERRUPTED)
        raise SystemExit(130) from None
    except SeqPointError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(_os_message(exc))
    except Exception as exc:  # a bug: one line and a traceback file, never a raw traceback
        _report_internal_error(exc)
        raise SystemExit(1) from None
    code = rv if isinstance(rv, int) else 0
    if code == 130:
        # typer turns Ctrl-C inside a command into a silent exit code 130.
        err_console.print(_INTERRUPTED)
    return code
