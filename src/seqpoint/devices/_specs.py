"""GPUs: the device description files (TOML) shipped in ``seqpoint/data/devices`` and a
user's own, read into :class:`GPUSpec` (torch-free).

A file gives a GPU's dense (no sparsity) peak FLOP/s per dtype on tensor and CUDA cores,
its memory bandwidth and size, L2 size, SM count and clocks, and a ``[sources]`` table
that says where each value comes from. Its key (``roofline_<key>_s``, ``model:<key>``,
``[selection] proxy_device``) is the file's name without ``.toml``.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from seqpoint.exceptions import ConfigError

__all__ = ["GPU_SPECS", "PRECISIONS", "GPUSpec", "device_key", "gpu_named", "resolve_device"]

#: Precisions an operator runs at, and the dtypes a ``tensor_flops`` or ``cuda_flops`` table may give.
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
#: Numeric fields of a device file: what each is, for the message when one is missing or bad.
_NUMBERS = {"bandwidth": "the memory bandwidth in bytes/s (bandwidth = 3.35e12)",
            "memory_gb": "the memory size in GB (memory_gb = 80)",
            "l2_mb": "the L2 cache size in MB (l2_mb = 50), or leave it out",
            "sm_count": "the number of SMs, an int (sm_count = 132)",
            "boost_clock_mhz": "the SM boost clock in MHz (boost_clock_mhz = 1980), or leave it out",
            "memory_clock_mhz": "the memory clock in MHz, or leave it out"}
_OPTIONAL = ("l2_mb", "boost_clock_mhz", "memory_clock_mhz")
#: The peaks the roofline needs: fp32 on CUDA cores, and fp16 on tensor cores (bf16 falls back to it).
_TABLES = {"tensor_flops": ("fp16", "dense tensor-core FLOP/s per dtype ([tensor_flops] fp16 = 989.4e12)"),
           "cuda_flops": ("fp32", "CUDA-core FLOP/s per dtype ([cuda_flops] fp32 = 67e12)")}
_KEY = re.compile(r"[a-z0-9][a-z0-9_.-]*")


@dataclass(frozen=True, kw_only=True)
class GPUSpec:
    """One GPU of a device description file: dense (no sparsity) peaks from the vendor's data sheet."""

    name: str
    """Marketing name and form factor."""
    tensor_flops: dict[str, float]
    """Tensor-core FLOP/s per dtype (``tf32``, ``bf16``, ``fp16``)."""
    cuda_flops: dict[str, float]
    """CUDA-core FLOP/s per dtype (``fp32``, ``fp16``, ``bf16``)."""
    bandwidth: float
    """Memory bandwidth, bytes/s."""
    memory_gb: float
    """Memory size, GB."""
    l2_mb: float | None = None
    """L2 cache size, MB (None when the vendor does not publish it)."""
    sm_count: int
    """Streaming multiprocessors."""
    boost_clock_mhz: float | None = None
    """SM boost clock, MHz (None when the file does not give it)."""
    memory_clock_mhz: float | None = None
    """Memory clock, MHz (None when the file does not give it)."""
    cuda_names: tuple[str, ...] = ()
    """What ``torch.cuda.get_device_name()`` (and ``nvidia-smi --query-gpu=name``) call this
    GPU: how a measurement's device is matched to its file."""
    sources: dict[str, str] = field(default_factory=dict)
    """Field name to where its value comes from (data sheet or whitepaper and year)."""

    def peak(self, precision: str) -> float:
        """Peak FLOP/s of an operator at ``precision``: ``fp32`` on CUDA cores; ``tf32`` on
        tensor cores (CUDA cores without them: Volta runs TF32-allowed math in fp32);
        ``bf16``/``fp16`` on tensor cores, else CUDA cores. ConfigError for a precision the
        GPU has neither (bf16 on a V100, which would run it emulated)."""
        if precision == "fp32" or (precision == "tf32" and "tf32" not in self.tensor_flops):
            return self.cuda_flops["fp32"]
        peak = self.tensor_flops.get(precision) or self.cuda_flops.get(precision)
        if peak is None:
            raise ConfigError(f"The {self.name} has no {precision} arithmetic (its device file gives none): project a "
                              f"{precision} run onto a GPU that has it, or use dtype = \"fp16\" or \"fp32\".")
        return peak

    def supports(self, precision: str) -> bool:
        """Whether the GPU runs ``precision`` natively (see :meth:`peak`)."""
        return precision in ("fp32", "tf32") or precision in self.tensor_flops or precision in self.cuda_flops


def _bad(where: str, name: str, what: str, got: object = None) -> ConfigError:
    kind = "a non-empty string" if name == "name" else "a number > 0"
    state = "is missing" if got is None else f"must be {kind}, got {got!r}"
    return ConfigError(f"Device file {where}: field {name!r} {state}; give {what}.")


def _positive(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _parse(text: str, where: str) -> GPUSpec:
    """A :class:`GPUSpec` from a device file's text; ``where`` names the file in errors."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Device file {where} is not valid TOML ({exc}); fix that line.") from None
    known = ("name", *_NUMBERS, *_TABLES, "cuda_names", "sources")
    for k in data:
        if k not in known:
            raise ConfigError(f"Device file {where}: unknown field {k!r}; the fields are {', '.join(known)}.")
    if "name" not in data or not isinstance(data["name"], str) or not data["name"]:
        raise _bad(where, "name", 'the GPU\'s name (name = "H100 SXM5")', data.get("name"))
    for k in _NUMBERS:
        if k not in data and k not in _OPTIONAL:
            raise _bad(where, k, _NUMBERS[k])
        if k in data and not (_positive(data[k]) and (k != "sm_count" or isinstance(data[k], int))):
            raise _bad(where, k, _NUMBERS[k], data[k])
    tables: dict[str, dict[str, float]] = {}
    for k, (needed, what) in _TABLES.items():
        table = data.get(k, {})
        if not isinstance(table, dict):
            raise _bad(where, k, what, table)
        for dtype, v in table.items():
            if dtype not in PRECISIONS:
                raise ConfigError(f"Device file {where}: unknown dtype {k}.{dtype}; give any of {', '.join(PRECISIONS)}.")
            if not _positive(v):
                raise _bad(where, f"{k}.{dtype}", what, v)
        if needed not in table:
            raise _bad(where, f"{k}.{needed}", what)
        tables[k] = {d: float(v) for d, v in table.items()}
    sources = data.get("sources", {})
    if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
        raise ConfigError(f"Device file {where}: [sources] must map field names to strings (bandwidth = \"...\").")
    names = data.get("cuda_names", [])
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise ConfigError(f"Device file {where}: cuda_names must be a list of the GPU's names as "
                          "torch.cuda.get_device_name() gives them (cuda_names = [\"NVIDIA H100 80GB HBM3\"]).")
    return GPUSpec(name=data["name"], tensor_flops=tables["tensor_flops"], cuda_flops=tables["cuda_flops"],
                   bandwidth=float(data["bandwidth"]), memory_gb=float(data["memory_gb"]),
                   sm_count=data["sm_count"], sources=dict(sources), cuda_names=tuple(names),
                   **{k: float(data[k]) for k in _OPTIONAL if k in data})


def device_key(device: str) -> str:
    """The name a device's metrics carry (``roofline_<key>_s``, ``model_<key>_s``): a shipped
    GPU's key, or a device file's name without ``.toml``."""
    return Path(device).stem.lower() if device.endswith(".toml") else device.lower()


def resolve_device(device: str) -> tuple[str, GPUSpec]:
    """``(key, spec)`` of a shipped GPU's key or of a device file (a path ending ``.toml``), the
    file read and checked; ConfigError naming the file and the missing or bad field."""
    key = device_key(device)
    if not device.endswith(".toml"):
        if key not in GPU_SPECS:
            raise ConfigError(f"Unknown GPU {device!r}. Valid GPUs: {', '.join(GPU_SPECS)}, "
                              "or a device file (a path ending .toml).")
        return key, GPU_SPECS[key]
    if key in GPU_SPECS or key == "cpu" or not _KEY.fullmatch(key):
        raise ConfigError(f"Device file {device}: its name {key!r} must differ from the shipped devices "
                          "(cpu, " + ", ".join(GPU_SPECS) + ") and use only letters, digits, '-', '_' "
                          "and '.'; rename the file.")
    try:  # the shipped files in seqpoint/data/devices show every field
        text = Path(device).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read device file {device} ({exc.strerror}); give the path of an existing "
                          ".toml file.") from None
    return key, _parse(text, device)


def gpu_named(cuda_name: str) -> str | None:
    """The key of the shipped GPU whose ``cuda_names`` hold ``cuda_name``, else None."""
    return next((k for k, spec in GPU_SPECS.items() if cuda_name in spec.cuda_names), None)


def _shipped() -> dict[str, GPUSpec]:
    folder = resources.files("seqpoint").joinpath("data", "devices")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".toml")), key=lambda f: f.name.removesuffix(".toml"))
    return {f.name.removesuffix(".toml"): _parse(f.read_text(encoding="utf-8"), f"seqpoint/data/devices/{f.name}")
            for f in files}


#: The shipped GPUs by key (``v100``, ``v100-32gb``, ``a40``, ``a100`` (80 GB SXM), ``a100-40gb``,
#: ``h100`` (SXM5), ``h100-pcie``, ``h200``, ``b200``, ``l4``), read from ``seqpoint/data/devices``.
GPU_SPECS: dict[str, GPUSpec] = _shipped()
