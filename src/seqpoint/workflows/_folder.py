"""The run folder: results with the resolved config and an environment manifest beside them."""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime
from pathlib import Path

from seqpoint.exceptions import ConfigError, SeqPointWarning

__all__ = ["RunFolder", "check_run_name"]

#: File naming the command whose outputs a run folder holds (see RunFolder).
_MARKER = ".seqpoint-command"

#: Longest run name (most file systems allow 255 bytes per name; the time stamp is added).
MAX_NAME = 200


def check_run_name(name: str) -> str:
    """``name`` when it is one safe path component of ``runs/<name>-<time>``; ConfigError
    when it is empty, too long, or holds ``/``, ``\\``, NUL, a control character or a
    leading dot (which would write elsewhere or hide the folder)."""
    if (not name or len(name.encode()) > MAX_NAME or name.startswith(".")
            or any(c in "/\\" or ord(c) < 32 or ord(c) == 127 for c in name)):
        raise ConfigError(f"The run name {name[:60]!r} must be one plain folder name (no '/', '\\', '..', "
                          f"control characters or leading dot, at most {MAX_NAME} bytes); e.g. 'ds2-librispeech'.")
    return name


class RunFolder:
    """A folder holding one run's outputs, created on first write and marked with ``command``
    (``run``, ``validate``, ...). A folder that holds another command's files, or unmarked
    ones, gets a warning (they stay, and may describe another run); a resumed run does not."""

    def __init__(self, path: str | Path, command: str = "") -> None:
        self.path = Path(path)
        self.command = command
        self._checked = False

    @classmethod
    def new(cls, name: str, out: str | None = None, *, command: str = "") -> RunFolder:
        """``out`` when given, else ``runs/<name>-<UTC timestamp>``, for ``command``; ConfigError
        when ``name`` is not one safe path component (:func:`check_run_name`) or ``out`` holds NUL."""
        if out:
            if "\x00" in out:
                raise ConfigError(f"The run folder {out!r} holds a NUL character; give a plain path.")
            return cls(out, command)
        check_run_name(name)
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        return cls(Path("runs") / f"{name}-{stamp}", command)

    def file(self, name: str) -> Path:
        if not self._checked:
            self._checked = True
            self._claim()
        self.path.mkdir(parents=True, exist_ok=True)
        return self.path / name

    def _claim(self) -> None:
        """Mark the folder as ``command``'s, warning when it holds another's files."""
        marker = self.path / _MARKER
        if self.path.is_dir():
            names = sorted(p.name for p in self.path.iterdir() if p.name != _MARKER)
            before = marker.read_text().strip() if marker.is_file() else None
            if names and before != self.command:
                shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
                whose = f"seqpoint {before}" if before else "an earlier run"
                warnings.warn(
                    f"The run folder {self.path} already holds {len(names)} file(s) of {whose} ({shown}); "
                    "this run overwrites the files it writes and leaves the others, which may describe "
                    "another run: give an empty folder ([report] out or -o) to keep runs apart.",
                    SeqPointWarning, stacklevel=4,
                )
        self.path.mkdir(parents=True, exist_ok=True)
        marker.write_text(self.command + "\n")

    def write_json(self, name: str, data: object) -> Path:
        p = self.file(name)
        p.write_text(json.dumps(data, indent=2, default=_jsonable) + "\n")
        return p

    def write_text(self, name: str, text: str) -> Path:
        p = self.file(name)
        p.write_text(text)
        return p


def _jsonable(obj: object) -> object:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)
