"""Measurement records (torch-free); the file format is in ``_io`` and ``_schema``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from seqpoint._signature import Signature, SignatureFields
from seqpoint.exceptions import InputError

__all__ = ["Measurement", "Measurements", "Status", "StepWindow"]

Status = Literal["ok", "oom", "error"]


@dataclass(frozen=True, kw_only=True)
class Measurement(SignatureFields):
    """Metrics of one training iteration of one signature."""

    iteration: int = -1
    """Iteration of the schedule this signature was taken from (-1 if none)."""
    status: Status = "ok"
    """``ok``, ``oom`` (ran out of memory) or ``error`` (raised)."""
    message: str = ""
    """Why a point failed; empty when ok."""
    metrics: dict[str, float] = field(default_factory=dict)
    """Metric name (unit in the name: ``time_s``, ``flops``, ``peak_mem_bytes``) to value."""
    breakdown_s: dict[str, float] = field(default_factory=dict)
    """Operation category to seconds per iteration."""
    samples: dict[str, list[float]] = field(default_factory=dict)
    """Raw repeats of timed metrics (for spread and error estimates)."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Measurement:
        """A measurement as :meth:`to_dict` wrote it, unchecked (:func:`parse_measurement` checks)."""
        sum_sq = d.get("sum_sq_len")
        return cls(iteration=int(d.get("iteration", -1)), batch_size=int(d["batch_size"]), seq_len=int(d["seq_len"]),
                   tgt_len=int(d.get("tgt_len", 0)), sum_sq_len=None if sum_sq is None else int(sum_sq),
                   status=d.get("status", "ok"), message=str(d.get("message", "")),
                   metrics={k: float(v) for k, v in d.get("metrics", {}).items()},
                   breakdown_s={k: float(v) for k, v in d.get("breakdown_s", {}).items()},
                   samples={k: [float(x) for x in v] for k, v in d.get("samples", {}).items()})


@dataclass(frozen=True, kw_only=True)
class StepWindow:
    """Every step of a short window of a run, timed in sequence in one fresh process: what a
    step costs the first time its shape occurs, and inside the run (the cold-step calibration)."""

    start: int
    """Schedule iteration of the window's first step."""
    signatures: tuple[Signature, ...]
    """Signature of every step, in run order."""
    times_s: tuple[float, ...]
    """Seconds of every step, in run order."""

    def __post_init__(self) -> None:
        if len(self.signatures) != len(self.times_s):
            raise InputError(f"A step window has {len(self.signatures)} signatures but {len(self.times_s)} "
                             "times; record it again ([profile] cold_window).")

    def to_dict(self) -> dict[str, object]:
        return {"start": self.start, "signatures": [list(s) for s in self.signatures],
                "times_s": list(self.times_s)}


@dataclass(frozen=True, kw_only=True)
class Measurements:
    """All measurements of one workload configuration (one MEASUREMENTS.json)."""

    workload: str
    """``name:preset`` or ``module:function``."""
    config: dict[str, Any] = field(default_factory=dict)
    """Resolved workload config."""
    environment: dict[str, Any] = field(default_factory=dict)
    """Environment fingerprint (versions, device, threads)."""
    measurements: tuple[Measurement, ...] = ()
    """One entry per SeqPoint."""
    protocol: dict[str, Any] = field(default_factory=dict)
    """How a campaign with worker processes measured (``processes``, the drift check); else empty."""
    window: StepWindow | None = None
    """A timed in-sequence window of the run (the cold-step calibration), if recorded."""
    compile: dict[str, float] = field(default_factory=dict)
    """What ``torch.compile`` cost a process that measured the points, once: ``seconds``,
    ``graphs``, ``processes``, ``spread_s`` (``compile_summary``); empty for an eager workload
    or when every point came from the cache."""

    @property
    def complete(self) -> bool:
        """True when every point measured ok."""
        return all(m.ok for m in self.measurements)

    def to_dict(self) -> dict[str, Any]:
        # Written only when present, so a serial campaign's file is as before.
        optional = {"protocol": self.protocol, "window": None if self.window is None else self.window.to_dict(),
                    "compile": dict(self.compile)}
        return {"workload": self.workload, "config": self.config, "environment": self.environment,
                "measurements": [m.to_dict() for m in self.measurements], **{k: v for k, v in optional.items() if v}}
