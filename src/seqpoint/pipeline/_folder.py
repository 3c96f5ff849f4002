"""The run folder: results with the resolved config and an environment manifest beside them."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from seqpoint._version import __version__

__all__ = ["RunFolder", "environment_manifest"]


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
            cwd=Path(__file__).resolve().parent, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def environment_manifest() -> dict[str, Any]:
    """What a reader needs to reproduce the run: versions, machine, threads, time."""
    env: dict[str, Any] = {
        "seqpoint": __version__,
        "git_commit": _git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "numpy": _version("numpy"),
        "torch": _version("torch"),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if "torch" in sys.modules:
        import torch

        env["torch_threads"] = torch.get_num_threads()
        env["cuda_available"] = bool(torch.cuda.is_available())
        if torch.cuda.is_available():
            env["cuda_device"] = torch.cuda.get_device_name(0)
    return env


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
