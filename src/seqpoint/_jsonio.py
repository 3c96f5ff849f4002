"""Reading and writing the JSON files of the command-line contract, with one error style."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seqpoint.exceptions import InputError

__all__ = ["read_json", "write_json"]


def write_json(data: Any, path: str | Path) -> Path:
    """Write ``data`` as indented JSON, creating the parent folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def read_json(path: str | Path, *, what: str, made_by: str) -> Any:
    """Parse a JSON file; a missing file or bad JSON is one :class:`InputError` line.

    Parameters
    ----------
    what : str
        What the file is ("SeqPoints file"), for the message.
    made_by : str
        The command that creates it ("seqpoint select"), for the fix.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what} {path} does not exist; create it with '{made_by}'.")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg}).") from None
