"""Options several commands share, declared once (same flag, same help everywhere)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

__all__ = ["USER_CODE_HELP", "AsJson", "Quiet", "UserCode", "print_json"]

USER_CODE_HELP = (
    "Allow a [workload] name of module:function, which imports and runs that module with "
    "your rights (a path/to/file.py:function is allowed without it)."
)

AsJson = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")]
UserCode = Annotated[bool, typer.Option("--allow-user-code", help=USER_CODE_HELP)]


def print_json(result: Any) -> None:
    """A result's ``to_dict()`` as indented JSON on stdout (what ``--json`` prints)."""
    print(json.dumps(result.to_dict(), indent=2, default=str))
