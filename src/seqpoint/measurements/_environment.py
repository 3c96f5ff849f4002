"""The one environment fingerprint: what a measurement depends on besides its workload. It
keys the measurement cache and, with provenance, is a run folder's ``environment.json``."""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from seqpoint._version import __version__

__all__ = ["CPU_ISA", "cpu_isa", "cpu_name", "environment_fingerprint", "environment_manifest"]


def _cpuinfo(*keys: str) -> str | None:
    """The value of the first ``/proc/cpuinfo`` line starting with one of ``keys``, or None."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as fh:
        return next((line.split(":", 1)[1].strip() for line in fh if line.startswith(keys)), None)
    return None


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    return _cpuinfo("model name") or platform.processor() or platform.machine()


#: CPU features that decide which oneDNN kernels a step runs (bf16 has native kernels only
#: with avx512_bf16 or AMX); one "model name" comes with or without them, so they key the cache.
CPU_ISA = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16",
           "amx_int8", "asimd", "sve", "bf16")


def cpu_isa() -> str:
    """The :data:`CPU_ISA` features this CPU has, space-separated, in that order ("" if unknown)."""
    flags = set((_cpuinfo("flags", "Features") or "").split())
    return " ".join(f for f in CPU_ISA if f in flags)


def environment_fingerprint(device: str = "cpu", *, harness: int | None = None) -> dict[str, Any]:
    """What a measurement depends on besides the workload config and the signature, every key part
    of the cache key: ``python``, ``torch``, ``seqpoint``, ``machine``, ``device`` (the CPU or GPU
    model of ``device``, where the steps run: ``cpu``, ``cuda:1``), ``device_type``, ``threads``,
    ``harness`` (the profiling method's version: a changed method reuses no cache row);
    ``cpu_isa`` on a CPU, ``cuda`` and ``cudnn`` on a GPU."""
    import torch

    kind = device.partition(":")[0]
    env: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__, "seqpoint": __version__,
                           "machine": platform.machine(), "device_type": kind, "threads": torch.get_num_threads()}
    if harness is not None:
        env["harness"] = harness
    if kind == "cuda":
        env.update(device=torch.cuda.get_device_name(device), cuda=torch.version.cuda,
                   cudnn=torch.backends.cudnn.version())
    else:
        env.update(device=cpu_name(), cpu_isa=cpu_isa())
    return env


def _version(dist: str) -> str | None:
    with contextlib.suppress(metadata.PackageNotFoundError):
        return metadata.version(dist)
    return None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def environment_manifest(device: str = "cpu") -> dict[str, Any]:
    """The fingerprint of ``device`` plus provenance (``git_commit``, ``platform``, ``processor``,
    ``cpu_count``, ``numpy``, ``created_utc``) for a run folder; torch keys None without torch."""
    if "torch" in sys.modules or _version("torch") is not None:
        env = environment_fingerprint(device)
        import torch

        env["cuda_available"] = bool(torch.cuda.is_available())
    else:
        env = {"python": platform.python_version(), "torch": None, "seqpoint": __version__,
               "machine": platform.machine(), "device_type": "cpu", "threads": None,
               "device": cpu_name(), "cpu_isa": cpu_isa()}
    env.update({"git_commit": _git_commit(), "platform": platform.platform(), "processor": platform.processor(),
                "cpu_count": os.cpu_count(), "numpy": _version("numpy"),
                "created_utc": datetime.now(UTC).isoformat(timespec="seconds")})
    return env
