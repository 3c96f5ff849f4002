"""How each point is measured: :class:`ProfileConfig`, the metric families it accepts,
and the harness's method version that keys the measurement cache."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Iterator
from typing import Any, ClassVar, NamedTuple

from seqpoint._config import to_dict
from seqpoint._params import Boolean, Constraint, Interval, Predicate, TypeOf, validate_params
from seqpoint.clocks import COUNTED_ISA, TIMERS, in_callgrind
from seqpoint.devices import GPU_SPECS, MODEL, resolve_device
from seqpoint.exceptions import ConfigError
from seqpoint.measurements.metrics import INSTRUCTIONS
from seqpoint.profiling._startup import STARTUP_STEPS

__all__ = ["HARNESS_VERSION", "METRICS", "PROTOCOL_FIELDS", "STARTUP_STEPS", "PointSteps", "ProfileConfig"]

#: Bumped when what the harness measures changes, so cached measurements of an older method
#: are not reused (2: a campaign-sized start-up decoy; 3: oneDNN primitive counts; 4: bytes at the
#: autocast dtype, fused attention, rnn and optimizer categories in counts).
HARNESS_VERSION = 4

#: Metric families ``--metric`` accepts (``roofline:<gpu>``, the bound, and ``model:<gpu>``, the
#: device model's time, for each GPU of GPU_SPECS or a device file).
METRICS: tuple[str, ...] = ("time", "flops", "bytes", "breakdown", "memory", "roofline", "model")

#: Fields of the multi-process protocol: left out of the cache key with ``processes = 1``.
PROTOCOL_FIELDS = ("processes", "interleave", "drift_steps")


def _metric_names(v: object) -> bool:
    # A string is a collection too, but ``metrics="time"`` would read as four names.
    return isinstance(v, Collection) and not isinstance(v, str) and len(v) > 0


class PointSteps(NamedTuple):
    """Training steps one measured point costs (the keywords of ``reduction_factor``):
    untimed, timed (at most) and under torch.profiler (breakdown, host peak memory)."""

    warmup: int
    repeats: int
    profiled: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProfileConfig:
    """How each point is measured."""

    warmup: int = 2
    """Untimed steps before the timed ones (allocator, caches, autotuning, compilation)."""
    repeats: int = 5
    """Timed steps; ``time_s`` is their median."""
    timer: str = "wall"
    """``wall``, ``cpu``, ``cuda`` or ``instructions`` (see ``TIMERS``): ``instructions`` counts each
    step's user-space instructions under callgrind (the AVX2 code path) in worker processes,
    stored as ``instructions``, not seconds."""
    metrics: tuple[str, ...] = ("time",)
    """Any of ``time``, ``flops``, ``bytes``, ``roofline:<gpu>`` and ``model:<gpu>`` (a key of
    ``GPU_SPECS`` or a device file, a path ending ``.toml``), ``breakdown``, ``memory``."""
    max_seconds_per_point: float = 0.0
    """Stop repeating a point once its timed steps took this long (0: no limit; >= 1 repeat)."""
    breakdown_steps: int = 1
    """Steps run under torch.profiler for the breakdown (after the timed ones)."""
    kineto_dir: str | None = None
    """Folder for one Kineto chrome trace per point (the profiled steps, with the point's
    iteration, signature and weight in its metadata); None writes none."""
    processes: int = 1
    """Fresh worker processes the timed repeats of every point are spread over (pyperf's
    protocol); 1 measures in this process. The interval counts the spread of the workers'
    run totals times Student's t (12.71 with 2 workers, 4.30 with 3): use 3 or more."""
    interleave: bool = True
    """With ``processes > 1``: run the points round-robin in each process (repeat r of
    every point before repeat r + 1), so slow drift in a process hits every point alike."""
    drift_steps: int = 3
    """With ``processes > 1``: timed steps of the drift check point (the campaign's first
    point) at the start and at the end of every process."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "warmup": [Interval(int, 0)],
        "repeats": [Interval(int, 1)],
        "breakdown_steps": [Interval(int, 1)],
        "metrics": [Predicate(_metric_names, "a non-empty tuple of names")],
        "max_seconds_per_point": [Interval(float, 0, word="a number")],
        "kineto_dir": [TypeOf((str, os.PathLike), "a folder path"), None],
        "processes": [Interval(int, 1, 64)],
        "interleave": [Boolean("true or false")],
        "drift_steps": [Interval(int, 1)],
    }

    def __post_init__(self) -> None:
        if isinstance(self.metrics, Iterator):  # a generator is read once, here
            object.__setattr__(self, "metrics", tuple(self.metrics))
        validate_params(self)
        TIMERS.get(self.timer)  # the registry's message lists the valid timers
        object.__setattr__(self, "metrics", tuple(self.metrics))
        if self.kineto_dir is not None:
            object.__setattr__(self, "kineto_dir", os.fspath(self.kineto_dir))
        if self.processes > self.repeats:
            raise ConfigError(
                f"The 'processes' parameter ({self.processes}) spreads the 'repeats' ({self.repeats}) "
                "over processes, so it must be <= repeats; raise 'repeats' or lower 'processes'."
            )
        for m in self.metrics:
            family, _, gpu = m.partition(":") if isinstance(m, str) else (m, "", "")
            if family not in METRICS or (family in ("roofline", "model")) != bool(gpu):
                raise ConfigError(
                    f"Unknown metric {m!r}. Valid metrics: time, flops, bytes, breakdown, memory, "
                    f"{', '.join('roofline:' + g for g in GPU_SPECS)}, roofline:<device file.toml>, "
                    "model:<gpu or device file.toml>."
                )
            if gpu and not gpu.endswith(".toml") and gpu.lower() not in GPU_SPECS:
                raise ConfigError(
                    f"Unknown GPU {gpu!r} in metric {m!r}. Valid GPUs: {', '.join(GPU_SPECS)}, "
                    "or a device file (a path ending .toml)."
                )
            if gpu:
                resolve_device(gpu)  # a user's file is read and checked here

    @property
    def families(self) -> frozenset[str]:
        """The metric families asked for (``roofline:h100`` is ``roofline``, ``model:h100`` ``model``)."""
        return frozenset(m.partition(":")[0] for m in self.metrics)

    @property
    def stepped(self) -> bool:
        """True when measuring runs real training steps (time, breakdown or memory; the other
        families count on a meta clone)."""
        return bool(self.families & {"time", "breakdown", "memory"})

    @property
    def in_workers(self) -> bool:
        """True when the time is measured in fresh worker processes: ``processes > 1``, or the
        ``instructions`` timer (it counts only under callgrind, in a worker, whatever ``processes``)."""
        return "time" in self.families and (self.processes > 1 or in_callgrind(self.timer))

    @property
    def profiled_apart(self) -> bool:
        """True when steps run under torch.profiler (breakdown, host memory, a Kineto trace)."""
        return bool(self.families & {"breakdown", "memory"}) or self.kineto_dir is not None

    def point_steps(self) -> PointSteps:
        """Training steps one point costs (``repeats`` at most); with ``processes = P > 1``
        every process warms every point up again (one more when profiled here)."""
        profiled = self.breakdown_steps if self.profiled_apart else 0
        warmup = self.warmup
        if self.in_workers:
            warmup *= self.processes + (1 if self.profiled_apart else 0)
        return PointSteps(warmup=warmup, repeats=self.repeats, profiled=profiled)

    def protocol_steps(self) -> int:
        """Steps of a campaign that belong to no point: each worker's start-up, drift checks
        and the step that re-warms the check point (0 in this process, as a real run pays it)."""
        if not self.in_workers:
            return 0
        return self.processes * (STARTUP_STEPS + 2 * self.drift_steps + 1)

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain data (part of every cache key), without ``kineto_dir`` when None
        nor the protocol fields with ``processes = 1``, so keys cached before them still match;
        with the ``instructions`` timer, the instruction set the counted code ran (``counted_isa``);
        with a device file in ``metrics``, what it holds (``device_files``), so an edit re-measures;
        with a ``model:`` metric, the device model's constants (``device_model``)."""
        out = to_dict(self)
        files = [g for g in (m.partition(":")[2] for m in self.metrics) if g.endswith(".toml")]
        if files:
            out["device_files"] = {g: to_dict(resolve_device(g)[1]) for g in files}
        if "model" in self.families:
            out["device_model"] = to_dict(MODEL)
        if self.timer == INSTRUCTIONS:
            out["counted_isa"] = COUNTED_ISA
        if out["kineto_dir"] is None:
            del out["kineto_dir"]
        if self.processes == 1:
            for name in PROTOCOL_FIELDS:
                del out[name]
        return out
