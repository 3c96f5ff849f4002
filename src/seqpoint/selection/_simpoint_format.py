"""SimPoint 3.0's ``.simpoints`` and ``.weights`` files, for simulators (gem5, Sniper)::

    prog.simpoints   <interval> <cluster>     one line per simulation point
    prog.weights     <weight> <cluster>       the fraction of intervals it stands for

An *interval* is a training iteration, a *cluster* the index of the SeqPoint in its set.
Weights are fractions of ``n_iterations`` summing to 1, written repr-exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seqpoint.exceptions import InputError
from seqpoint.schedule import IterationSchedule
from seqpoint.selection._seqpoints import SeqPoint, SeqPoints

__all__ = ["SimPointFiles", "read_simpoints", "seqpoints_from_simpoints", "write_simpoints"]

_MADE_BY = "write them with seqpoint.selection.write_simpoints"


@dataclass(frozen=True)
class SimPointFiles:
    """The content of a ``.simpoints``/``.weights`` pair, ordered by cluster."""

    intervals: tuple[int, ...]
    """Interval (iteration) of each cluster's simulation point."""
    weights: tuple[float, ...]
    """Fraction of all intervals each cluster stands for (they sum to 1)."""


def _paths(stem: str | Path) -> tuple[Path, Path]:
    stem = str(stem)
    return Path(stem + ".simpoints"), Path(stem + ".weights")


def write_simpoints(seqpoints: SeqPoints, stem: str | Path) -> tuple[Path, Path]:
    """Write ``stem.simpoints`` and ``stem.weights`` (``stem`` a path without suffix) in
    SimPoint 3.0's format, point ``i`` as cluster ``i``; returns the two paths."""
    simpoints, weights = _paths(stem)
    simpoints.parent.mkdir(parents=True, exist_ok=True)
    n = float(seqpoints.n_iterations)
    simpoints.write_text("".join(f"{p.iteration} {i}\n" for i, p in enumerate(seqpoints.points)))
    weights.write_text("".join(f"{p.weight / n!r} {i}\n" for i, p in enumerate(seqpoints.points)))
    return simpoints, weights


def _read_pairs(path: Path, first: type[int] | type[float], what: str) -> dict[int, float]:
    """``cluster -> value`` from lines ``<value> <cluster>``, naming the bad line."""
    if not path.is_file():
        raise InputError(f"SimPoint file {path} does not exist; {_MADE_BY}.")
    out: dict[int, float] = {}
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError
            value, cluster = first(parts[0]), int(parts[1])
        except ValueError:
            raise InputError(f"{path}: line {lineno}: {line.strip()!r} is not '<{what}> "
                             "<cluster>'; fix or drop that line.") from None
        if cluster in out:
            raise InputError(f"{path}: line {lineno}: cluster {cluster} appears twice.")
        out[cluster] = float(value)
    if not out:
        raise InputError(f"SimPoint file {path} is empty; {_MADE_BY}.")
    return out


def read_simpoints(stem: str | Path) -> SimPointFiles:
    """Read ``stem.simpoints`` and ``stem.weights`` (SimPoint 3.0's format); a missing file,
    a bad line, mismatched clusters or weights not summing to 1 is an InputError."""
    sp_path, w_path = _paths(stem)
    intervals = _read_pairs(sp_path, int, "interval")
    weights = _read_pairs(w_path, float, "weight")
    if set(intervals) != set(weights):
        raise InputError(f"{sp_path} and {w_path} name different clusters ({sorted(intervals)} "
                         f"against {sorted(weights)}); they must come from one run.")
    clusters = sorted(intervals)
    if any(intervals[c] < 0 for c in clusters) or any(weights[c] < 0 for c in clusters):
        raise InputError(f"{sp_path}/{w_path}: intervals and weights must be >= 0.")
    total = sum(weights.values())
    if abs(total - 1.0) > 1e-6:
        raise InputError(f"{w_path}: the weights sum to {total:g}; SimPoint weights sum to 1.")
    return SimPointFiles(
        intervals=tuple(int(intervals[c]) for c in clusters),
        weights=tuple(weights[c] for c in clusters),
    )


def seqpoints_from_simpoints(
    stem: str | Path, schedule: IterationSchedule, *, method: str = "simpoint-file"
) -> SeqPoints:
    """SeqPoints of ``schedule`` from a ``.simpoints``/``.weights`` pair: each interval's
    schedule row, weighted by its fraction of ``len(schedule)``."""
    files = read_simpoints(stem)
    n = len(schedule)
    bad = next((it for it in files.intervals if it >= n), None)
    if bad is not None:
        raise InputError(f"{stem}.simpoints names interval {bad} but the schedule has {n} "
                         "iterations; use the schedule the points were chosen from.")
    # Fractions times n carry rounding; rescale so the weights count n iterations exactly.
    scale = n / sum(frac * n for frac in files.weights)
    points = tuple(SeqPoint.from_row(schedule, it, frac * n * scale, lengths=False)
                   for it, frac in zip(files.intervals, files.weights, strict=True))
    return SeqPoints(method=method, n_iterations=n, points=points, meta={"source": str(stem)})
