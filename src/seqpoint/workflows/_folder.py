"""The run folder: results with the resolved config and an environment manifest beside them."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["RunFolder"]


class RunFolder:
    """A folder holding one run's outputs; created on first write."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def new(cls, name: str, out: str | None = None) -> RunFolder:
        """``out`` when given, else ``runs/<name>-<UTC timestamp>``."""
        if out:
            return cls(out)
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
