"""The plan of a profiling campaign, pure of any execution: what each point is measured as,
what the cache already holds, what is left to measure, and the one cache key
(:meth:`Plan.of`). The serial campaign and every executor's driver plan with it, so
they read and write each other's cache rows."""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, cast

from seqpoint._config import to_dict
from seqpoint._signature import Signature
from seqpoint.cache import MeasurementCache
from seqpoint.measurements import Measurement, Status, environment_fingerprint
from seqpoint.profiling._config import HARNESS_VERSION, ProfileConfig
from seqpoint.profiling._failures import failed_measurement
from seqpoint.workloads import (
    BatchShape,
    SetsThreads,
    Trains,
    Workload,
    WorkloadFacts,
    describe,
    takes_batch_shape,
)

__all__ = ["CampaignKey", "Pending", "Plan", "Point", "Points", "Unit", "as_points"]

#: What is measured once: a signature and, for a workload that takes a BatchShape, the
#: digest of the point's real lengths (None: the signature alone).
Unit = tuple[Signature, str | None]


class _PointSet(Protocol):
    @property
    def points(self) -> Sequence[Any]: ...


#: What a campaign measures: SeqPoints, SeqPoint-like objects (``iteration``, ``signature``
#: and optionally ``weight``, ``lengths``, ``tgt_lengths``, ``row_of``) or signature tuples.
Points = _PointSet | Iterable[Any]


class Point(NamedTuple):
    """What a campaign reads of a SeqPoint (iteration -1 for a bare signature; the real
    lengths when the schedule recorded them; the weight goes into its Kineto trace)."""

    iteration: int
    signature: Signature
    lengths: tuple[int, ...] | None = None
    tgt_lengths: tuple[int, ...] | None = None
    row_of: tuple[int, ...] | None = None
    weight: float | None = None


def _ints(values: Iterable[Any] | None) -> tuple[int, ...] | None:
    return None if values is None else tuple(int(v) for v in values)


def as_points(points: Points) -> list[Point]:
    """Each point of a set (``.points``) or of an iterable of SeqPoint-like objects and
    signature tuples."""
    found = getattr(points, "points", None)
    items: Iterable[Any] = found if found is not None else cast("Iterable[Any]", points)
    out: list[Point] = []
    for p in items:
        if not hasattr(p, "signature"):
            out.append(Point(-1, tuple(int(v) for v in p)))
            continue
        weight = getattr(p, "weight", None)
        out.append(Point(int(getattr(p, "iteration", -1)), tuple(int(v) for v in p.signature),
                         lengths=_ints(getattr(p, "lengths", None)), tgt_lengths=_ints(getattr(p, "tgt_lengths", None)),
                         row_of=_ints(getattr(p, "row_of", None)), weight=None if weight is None else float(weight)))
    return out


#: Packages whose code the environment fingerprint already pins by version.
_VERSIONED = ("builtins", "torch", "numpy", "typing", "abc", "collections", "functools")


def _digest(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def _module_digest(module: str) -> str | None:
    """sha256 of a module's source file, or None for built-in and versioned modules."""
    mod = sys.modules.get(module)
    if module.split(".", 1)[0] in _VERSIONED or mod is None:
        return None
    try:
        path = inspect.getsourcefile(mod)
    except TypeError:
        return None
    return None if path is None else _digest(path)


def workload_code_hash(workload: Workload, source_files: Iterable[str] = ()) -> str:
    """A hash of the code that defines ``workload`` (the source files of its classes, its
    model's module classes and ``source_files``; its parameters' names, shapes and dtypes),
    keyed by module name so the same code keys alike in every checkout."""
    modules: set[str] = {c.__module__ for c in type(workload).__mro__}
    shapes: list[list[Any]] = []
    if isinstance(workload, Trains):
        modules |= {type(m).__module__ for m in workload.model.modules()}
        shapes = [[n, list(p.shape), str(p.dtype)] for n, p in workload.model.named_parameters()]
    files = {m: d for m in sorted(modules) if (d := _module_digest(m)) is not None}
    for path in sorted(set(source_files)):
        files[f"file:{path.rsplit('/', 1)[-1]}"] = _digest(path) or "unreadable"
    return hashlib.sha256(repr((sorted(files.items()), shapes)).encode()).hexdigest()


def _config_dict(workload: Workload) -> dict[str, Any]:
    """The workload's config as plain data (recorded and part of the cache key)."""
    cfg = getattr(workload, "config", None)
    if cfg is None:
        return {}
    if hasattr(cfg, "to_dict"):
        return dict(cfg.to_dict())
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return to_dict(cfg)
    return dict(cfg) if isinstance(cfg, dict) else {"repr": repr(cfg)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class CampaignKey:
    """What a campaign's measurements are taken under: the cache key's inputs besides the point."""

    workload: str
    """Workload name as the workload reports it (``deepspeech2:tiny``)."""
    config: dict[str, Any]
    """The built workload's resolved config."""
    environment: dict[str, Any]
    """The environment fingerprint of the measuring process."""
    code: str = ""
    """Hash of the workload's code (:func:`workload_code_hash`)."""
    takes_shape: bool = False
    """The workload takes a BatchShape: its points' real lengths are part of the key."""

    @classmethod
    def of(cls, workload: Workload, facts: WorkloadFacts | None = None, *, code: bool = True,
           source_files: Iterable[str] = ()) -> CampaignKey:
        """The key of ``workload`` in this process (its thread count applied first);
        ``source_files`` join the code hash (a user factory's file, from its recipe)."""
        if isinstance(workload, SetsThreads):
            workload.apply_threads()
        facts = facts or describe(workload)
        return cls(workload=facts.name, config=_config_dict(workload),
                   environment=environment_fingerprint(facts.device, harness=HARNESS_VERSION),
                   code=workload_code_hash(workload, (*facts.source_files, *source_files)) if code else "",
                   takes_shape=takes_batch_shape(workload))

    def cache_key(self, cache: MeasurementCache, config: ProfileConfig, unit: Unit) -> str:
        """The one cache key of ``unit`` measured under ``config``."""
        env = {**self.environment, "workload_code": self.code}
        return cache.key(self.workload, self.config, env, unit[0], config.to_dict(), lengths=unit[1])

    def shape(self, point: Point) -> BatchShape | None:
        """The BatchShape the workload is given for ``point`` (None: the bare signature)."""
        if not self.takes_shape or point.lengths is None:
            return None
        return BatchShape.of(point.signature, point.lengths, point.tgt_lengths, row_of=point.row_of,
                             workload=self.workload)


class Pending(NamedTuple):
    """A unit left to measure: the first point that asks for it, and its BatchShape."""

    unit: Unit
    point: Point
    shape: BatchShape | None

    @property
    def size(self) -> int:
        """Padded tokens of its signature (a task's points run largest first)."""
        sig = self.unit[0]
        return sig[0] * (sig[1] + (sig[2] if len(sig) > 2 else 0))

    def failed(self, why: BaseException | str) -> Measurement:
        """The record of this unit not measured, and why (``oom`` for an out-of-memory error)."""
        status: Status = "oom" if isinstance(why, str) and "OutOfMemory" in why else "error"
        return failed_measurement(self.unit[0], why, status=status)


@dataclasses.dataclass(frozen=True)
class Plan:
    """A campaign planned: each point's unit, what the cache held, what is left to measure."""

    key: CampaignKey | None
    """What the measurements are keyed under (None: not known, nothing cached)."""
    config: ProfileConfig
    """How each point is measured."""
    cache: MeasurementCache | None
    """Where measured points are stored."""
    units: tuple[tuple[int, Unit], ...]
    """``(iteration, unit)`` of every point, in input order."""
    cached: dict[Unit, Measurement]
    """Units the cache already held."""
    todo: tuple[Pending, ...]
    """Distinct units left to measure, in first-seen order."""

    @classmethod
    def of(cls, points: Points | Sequence[Point], key: CampaignKey | None, config: ProfileConfig,
           cache: MeasurementCache | None = None) -> Plan:
        """Plan a campaign: each point's unit, the cached ones, the distinct ones left. A ``key``
        of None (not known yet) looks nothing up and measures each signature once."""
        units: list[tuple[int, Unit]] = []
        cached: dict[Unit, Measurement] = {}
        todo: dict[Unit, Pending] = {}
        for p in as_points(points):
            shape = key.shape(p) if key is not None else None
            unit: Unit = (p.signature, None if shape is None else shape.digest())
            units.append((p.iteration, unit))
            if unit in cached or unit in todo:
                continue
            hit = None if cache is None or key is None else cache.get(key.cache_key(cache, config, unit))
            if hit is not None:
                cached[unit] = hit
            else:
                todo[unit] = Pending(unit, p, shape)
        return cls(key=key, config=config, cache=cache, units=tuple(units), cached=cached, todo=tuple(todo.values()))

    @property
    def signatures(self) -> list[Signature]:
        """Every point's signature (what a start-up shape is chosen from)."""
        return [unit[0] for _, unit in self.units]

    def store(self, unit: Unit, m: Measurement, key: CampaignKey | None = None) -> None:
        """Cache ``m`` (when ok) under ``key`` (default: the plan's; a worker's own names its node)."""
        key = key or self.key
        if self.cache is not None and key is not None and m.ok:
            self.cache.put(key.cache_key(self.cache, self.config, unit), m, workload=key.workload, signature=unit[0])

    def assemble(self, done: Mapping[Unit, Measurement]) -> tuple[Measurement, ...]:
        """One measurement per point, in input order, each with its own iteration."""
        return tuple(dataclasses.replace(done[unit], iteration=it) for it, unit in self.units)
