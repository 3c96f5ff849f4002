"""What an executor is given (:class:`Job`) and what one worker task runs.

The worker functions here are plain Python: the Ray executor wraps them with
``ray.remote`` at submission time, so importing this module imports neither ray nor
torch. They depend only on the public profiling API (``profile_points``), so a worker
measures a point exactly as the serial path does and reports the workload name, config
and environment fingerprint it measured under: the inputs of the cache key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from seqpoint.exceptions import SeqPointError
from seqpoint.measurements import Measurement, Measurements, Status
from seqpoint.profiling import ProfileConfig, is_oom, profile_points, workload_code_hash
from seqpoint.selection import SeqPoint, SeqPoints
from seqpoint.workloads import Workload, takes_batch_shape

__all__ = [
    "Header",
    "Job",
    "Point",
    "PointResult",
    "as_points",
    "failed",
    "measure_points",
    "probe_headers",
]

class Point(NamedTuple):
    """A point to measure, as the driver sends it to a worker: what the serial path reads
    of a SeqPoint (its real lengths included) and nothing else."""

    iteration: int
    """The schedule iteration it stands for (-1 for a bare signature)."""
    signature: tuple[int, ...]
    """``(batch_size, seq_len, tgt_len[, sum_sq_len])``."""
    lengths: tuple[int, ...] | None = None
    """Real length of each sequence, when the schedule recorded them."""
    tgt_lengths: tuple[int, ...] | None = None
    """Real target length of each sequence, when recorded."""
    row_of: tuple[int, ...] | None = None
    """Packed row of each sequence (packed batches), when recorded."""


class _OnePoint:
    """A one-point campaign that :func:`~seqpoint.profiling.profile_points` reads as it
    reads SeqPoints, so a worker builds the point's BatchShape as the serial path does."""

    def __init__(self, point: Point) -> None:
        self.points = (point,)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Job:
    """One workload configuration and the points to profile on it."""

    workload: str
    """``name[:preset]`` or ``module:function`` (as for ``load_workload``)."""
    overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Workload config fields to change (``{"dtype": "bf16"}``), as ``--set`` gives them."""
    config: ProfileConfig = dataclasses.field(default_factory=ProfileConfig)
    """How each point is measured."""
    points: SeqPoints | Sequence[SeqPoint] | Sequence[Sequence[int]] = ()
    """The SeqPoints (or bare signatures) to profile."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Header:
    """What a measurement was taken under: the inputs of its cache key besides the point."""

    workload: str
    """Workload name as the workload reports it (``deepspeech2:tiny``)."""
    config: dict[str, Any]
    """The built workload's resolved config."""
    environment: dict[str, Any]
    """The environment fingerprint computed in the measuring process."""
    code: str = ""
    """Hash of the workload's code (:func:`seqpoint.profiling.workload_code_hash`), part of the key."""
    takes_shape: bool = False
    """The workload takes a BatchShape: its points' real lengths are part of the key."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class PointResult:
    """One measured point as a worker returns it to the driver."""

    slot: int
    """The driver's index of this point (unique within one submission)."""
    header: Header | None
    """None when the workload could not be built (then ``measurement`` says why)."""
    measurement: Measurement


def as_points(points: SeqPoints | Iterable[Any]) -> list[Point]:
    """Each point with its iteration (-1 for a bare signature) and recorded lengths."""
    items: Iterable[Any] = points.points if isinstance(points, SeqPoints) else points
    out: list[Point] = []
    for p in items:
        if isinstance(p, SeqPoint | Point):
            out.append(Point(int(p.iteration), tuple(int(v) for v in p.signature),
                             *(_ints(getattr(p, f, None)) for f in ("lengths", "tgt_lengths", "row_of"))))
        else:
            out.append(Point(-1, tuple(int(v) for v in p)))
    return out


def _ints(values: Iterable[Any] | None) -> tuple[int, ...] | None:
    return None if values is None else tuple(int(v) for v in values)


def failed(signature: Sequence[int], exc: BaseException | str, *, status: Status = "error") -> Measurement:
    """A measurement recording that ``signature`` could not be measured, and why."""
    if isinstance(exc, BaseException):
        status = "oom" if is_oom(exc) else status
        exc = f"{type(exc).__name__}: {exc}"
    sig = tuple(int(v) for v in signature)
    message = (exc.strip().splitlines() or [""])[0][:500]
    return Measurement(
        iteration=-1,
        batch_size=sig[0],
        seq_len=sig[1],
        tgt_len=sig[2] if len(sig) > 2 else 0,
        sum_sq_len=sig[3] if len(sig) > 3 else None,
        status=status,
        message=message,
    )


def header_of(ms: Measurements, workload: Workload) -> Header:
    """The key inputs of a campaign of ``workload``: what it recorded, and its code's hash."""
    return Header(workload=ms.workload, config=dict(ms.config), environment=dict(ms.environment),
                  code=workload_code_hash(workload), takes_shape=takes_batch_shape(workload))


def probe_headers(
    jobs: Sequence[tuple[str, Mapping[str, Any], ProfileConfig]],
) -> list[Header | str]:
    """Build each workload and return what its measurements would be keyed under.

    A campaign of no points computes the fingerprint (threads applied, device read)
    without stepping the model. A workload that cannot be built gives its error line
    instead; a :class:`~seqpoint.exceptions.SeqPointError` (bad spec or setting) is
    prefixed with ``"config: "`` so the driver can raise it as bad input.
    """
    from seqpoint.workloads import load_workload

    out: list[Header | str] = []
    for spec, overrides, config in jobs:
        try:
            workload = load_workload(spec, dict(overrides))
            out.append(header_of(profile_points(workload, [], config, progress=False), workload))
        except SeqPointError as exc:
            out.append(f"config: {exc}")
        except Exception as exc:  # a workload that fails to build fails its points, not the sweep
            out.append(f"{type(exc).__name__}: {exc}")
    return out


def measure_points(
    spec: str,
    overrides: Mapping[str, Any],
    config: ProfileConfig,
    points: Sequence[tuple[int, Point]],
) -> Iterator[PointResult]:
    """Build the workload once and measure ``points`` (``(slot, point)``) in order.

    Yields one :class:`PointResult` per point as soon as it is measured, so the driver
    can cache it before the next one starts. Each point is its own one-point campaign of
    :func:`~seqpoint.profiling.profile_points` on the same workload object: the process
    start-up runs once, before the first point, on a shape next to it (the driver puts
    the largest point first, so this is the serial path's start-up shape), and every
    point's first step is cold as it is in the serial path. A workload that takes a
    BatchShape gets the point's recorded lengths, as in the serial path.
    """
    from seqpoint.workloads import load_workload

    try:
        workload = load_workload(spec, dict(overrides))
    except Exception as exc:  # every point of this task records why
        for slot, point in points:
            yield PointResult(slot=slot, header=None, measurement=failed(point.signature, exc))
        return
    for slot, point in points:
        try:
            ms = profile_points(workload, _OnePoint(point), config, progress=False)
        except SeqPointError as exc:  # a bad signature fails its point only
            yield PointResult(slot=slot, header=None, measurement=failed(point.signature, exc))
            continue
        yield PointResult(slot=slot, header=header_of(ms, workload), measurement=ms.measurements[0])
