"""The typer application and the one error policy of the command line.

Every command module registers itself on :data:`app`. :func:`main` runs it and turns
any user-caused error into one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click
import typer
from rich.console import Console

from seqpoint.exceptions import SeqPointError

__all__ = ["app", "console", "err_console", "fail", "main"]

app = typer.Typer(
    name="seqpoint",
    help="Project whole-run training time of sequence models from a few SeqPoints.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

#: Tables and progress go to stdout; errors and warnings to stderr.
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def fail(message: str) -> None:
    """Print one error line and exit with status 2."""
    err_console.print(f"seqpoint: error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise SystemExit(2)


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        rv = app(args=args, prog_name="seqpoint", standalone_mode=False)
    except click.exceptions.UsageError as exc:
        name = exc.ctx.command_path if exc.ctx else "seqpoint"
        hint = f" Run '{name} --help'."
        fail(exc.format_message() + hint)
    except click.exceptions.Abort:
        err_console.print("seqpoint: interrupted; finished measurements are kept in the cache.")
        raise SystemExit(130) from None
    except SeqPointError as exc:
        fail(str(exc))
    except FileNotFoundError as exc:
        fail(f"{exc.filename}: no such file; check the path.")
    except IsADirectoryError as exc:
        fail(f"{exc.filename} is a directory; give a file.")
    except PermissionError as exc:
        fail(f"{exc.filename}: permission denied; choose a writable location.")
    except KeyboardInterrupt:
        err_console.print("seqpoint: interrupted; finished measurements are kept in the cache.")
        raise SystemExit(130) from None
    code = rv if isinstance(rv, int) else 0
    return code
