"""What the harness needs to know of a workload, read in one place (:func:`describe`): the device its steps run on,
every device its parameters span, its precision, threads and compilation. A reference workload says these in its config;
a user's object may say them in a ``device`` attribute, a config dataclass or a config dict (a Trainer's
``bf16``/``fp16``), or only through where its model's parameters live."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

__all__ = ["Trains", "WorkloadFacts", "describe"]


@runtime_checkable
class Trains(Protocol):
    """It exposes the model it trains and its optimizer (resident memory, the code hash, freeing
    gradients after a failed step)."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkloadFacts:
    """A workload's facts, resolved once (:func:`describe`)."""

    name: str
    """Its name (its class name when it has none)."""
    device: str
    """The device its steps run on: ``cpu``, ``cuda``, ``cuda:1`` (``meta`` for a counting clone)."""
    devices: tuple[str, ...]
    """Every device its parameters live on (a model spread over GPUs): what a timer synchronises."""
    dtype: str
    """``fp32``, ``tf32``, ``bf16`` or ``fp16``: the precision its matmuls run at."""
    threads: int
    """CPU threads it sets for torch before its steps (0: it leaves torch's count alone)."""
    compiled: bool
    """Its model runs through ``torch.compile``."""
    warmup_signature: tuple[int, ...] | None = None
    """A shape it offers for the process start-up (None: the campaign picks one)."""
    source_files: tuple[str, ...] = ()
    """Files of its code beyond its classes' modules (a factory's script): part of the code hash."""

    @property
    def device_type(self) -> str:
        """``cpu``, ``cuda`` or ``meta``."""
        return self.device.partition(":")[0]

    @property
    def on_cuda(self) -> bool:
        return self.device_type == "cuda"


def _config_value(config: object, key: str) -> Any:
    return config.get(key) if isinstance(config, Mapping) else getattr(config, key, None)


def _dtype(config: object) -> str:
    """A reference config's ``dtype``, or a Trainer's ``bf16``/``fp16``/``tf32`` flags."""
    found = _config_value(config, "dtype")
    if isinstance(found, str):
        return found
    return next((flag for flag in ("bf16", "fp16", "tf32") if _config_value(config, flag)), "fp32")


def describe(workload: object) -> WorkloadFacts:
    """The facts of ``workload`` (see :class:`WorkloadFacts`). Its device: its ``device``
    attribute, else its config's, else where its model's parameters live, else the CPU."""
    config = getattr(workload, "config", None)
    parameters = getattr(workload.model, "parameters", None) if isinstance(workload, Trains) else None
    spans = tuple(dict.fromkeys(str(p.device) for p in parameters())) if callable(parameters) else ()
    given = getattr(workload, "device", None) or _config_value(config, "device")
    device = str(given) if given is not None else (spans[0] if spans else "cpu")
    warmup = getattr(workload, "warmup_signature", None)
    threads = _config_value(config, "threads")
    return WorkloadFacts(
        name=str(getattr(workload, "name", type(workload).__name__)), device=device,
        devices=tuple(dict.fromkeys((device, *spans))), dtype=_dtype(config),
        threads=int(threads) if isinstance(threads, int) else 0,
        compiled=bool(_config_value(config, "compile")),
        warmup_signature=None if warmup is None else tuple(int(v) for v in warmup),
        source_files=tuple(str(p) for p in getattr(workload, "source_files", ()) or ()))
