"""The run folder: results with the resolved config and an environment manifest beside them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from seqpoint.exceptions import ConfigError

__all__ = ["RunFolder", "check_run_name"]

#: Longest run name (most file systems allow 255 bytes per name; the time stamp is added).
MAX_NAME = 200


def check_run_name(name: str) -> str:
    """Return ``name`` when it is one safe path component, else raise.

    A run's ``name`` becomes the folder ``runs/<name>-<time>``; a ``/``, ``..``, a NUL or
    a leading dot would write elsewhere or hide the folder.

    Raises
    ------
    ConfigError
        Empty, too long, or holding ``/``, ``\\``, NUL, control characters, or a leading dot.
    """
    bad = (
        not name
        or len(name.encode()) > MAX_NAME
        or name.startswith(".")
        or any(c in name for c in "/\\")
        or any(ord(c) < 32 or ord(c) == 127 for c in name)
    )
    if bad:
        raise ConfigError(
            f"The run name {name[:60]!r} must be one plain folder name (no '/', '\\', '..', "
            f"control characters or leading dot, at most {MAX_NAME} bytes); e.g. 'ds2-librispeech'."
        )
    return name


class RunFolder:
    """A folder holding one run's outputs; created on first write."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def new(cls, name: str, out: str | None = None) -> RunFolder:
        """``out`` when given, else ``runs/<name>-<UTC timestamp>``.

        Raises
        ------
        ConfigError
            ``name`` is not one safe path component (see :func:`check_run_name`), or
            ``out`` holds a NUL character.
        """
        if out:
            if "\x00" in out:
                raise ConfigError(f"The run folder {out!r} holds a NUL character; give a plain path.")
            return cls(out)
        check_run_name(name)
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        return cls(Path("runs") / f"{name}-{stamp}")

    def file(self, name: str) -> Path:
        self.path.mkdir(parents=True, exist_ok=True)
        return self.path / name

    def write_json(self, name: str, data: Any) -> Path:
        p = self.file(name)
        p.write_text(json.dumps(data, indent=2, default=_jsonable) + "\n")
        return p

    def write_text(self, name: str, text: str) -> Path:
        p = self.file(name)
        p.write_text(text)
        return p


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)
