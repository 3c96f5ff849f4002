"""SeqPoints: the chosen iterations and their weights, and their files: SEQPOINTS.json, and
SimPoint 3.0's ``.simpoints``/``.weights`` pair for simulators (gem5, Sniper)::

    prog.simpoints   <interval> <cluster>     one line per simulation point
    prog.weights     <weight> <cluster>       the fraction of intervals it stands for

An *interval* is a training iteration, a *cluster* the index of the SeqPoint in its set;
weights are fractions of ``n_iterations`` summing to 1, written repr-exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqpoint._jsonio import read_json, validate, write_json, write_text
from seqpoint._signature import SignatureFields
from seqpoint.exceptions import InputError
from seqpoint.schedule import IterationSchedule

__all__ = ["SeqPoint", "SeqPoints", "read_seqpoints", "write_seqpoints", "write_simpoints"]


#: A point's optional per-sequence fields, its last ones.
_PER_SEQUENCE = ("lengths", "tgt_lengths", "row_of")


@dataclass(frozen=True, kw_only=True)
class SeqPoint(SignatureFields):
    """One representative iteration and how many iterations it stands for."""

    weight: float
    """Iterations this point represents; the weights of a set sum to ``n_iterations``."""
    lengths: tuple[int, ...] | None = None
    """Real length of each sequence of the iteration, when the schedule records them."""
    tgt_lengths: tuple[int, ...] | None = None
    """Real target length of each sequence (encoder-decoder), when recorded."""
    row_of: tuple[int, ...] | None = None
    """Packed batches: the packed row of the batch that holds each sequence of
    :attr:`lengths` (the documents of a row share it), when recorded."""

    def __post_init__(self) -> None:
        # Lists from JSON become tuples: a point stays hashable and immutable.
        for name in _PER_SEQUENCE:
            if (value := getattr(self, name)) is not None:
                object.__setattr__(self, name, tuple(int(v) for v in value))

    @classmethod
    def from_row(cls, schedule: IterationSchedule, r: int, weight: float, *, lengths: bool = True) -> SeqPoint:
        """Schedule row ``r`` as a point of ``weight``, with its real lengths when recorded."""
        fields: dict[str, Any] = {c: int(getattr(schedule, c)[r]) for c in schedule.signature_columns()}
        if lengths and schedule.rows is not None:
            src, tgt = schedule.rows.row(r)
            row_of = schedule.rows.packed_row_of(r)
            fields.update(lengths=src.tolist(), tgt_lengths=None if tgt is None else tgt.tolist(),
                        row_of=None if row_of is None else row_of.tolist())
        return cls(iteration=int(schedule.iteration[r]), weight=float(weight), **fields)

    def to_dict(self) -> dict[str, object]:
        # The per-sequence fields (the last ones) only when set, as lists.
        return {k: list(getattr(self, k)) if k in _PER_SEQUENCE else v for k, v in super().to_dict().items()
                if v is not None or k not in _PER_SEQUENCE}


@dataclass(frozen=True, kw_only=True)
class SeqPoints:
    """A set of SeqPoints chosen by one method for one schedule."""

    method: str
    """Selector name (``seqpoint``, ``first``, ...)."""
    n_iterations: int
    """Iterations of the schedule the points represent."""
    points: tuple[SeqPoint, ...]
    """The chosen iterations, in iteration order."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Selector parameters and diagnostics (estimated error, k)."""

    def __post_init__(self) -> None:
        if not self.points:
            raise InputError("A SeqPoints set needs at least one point.")
        total = sum(p.weight for p in self.points)
        if abs(total - self.n_iterations) > 1e-6 * max(1, self.n_iterations):
            raise InputError(f"SeqPoint weights sum to {total:g} but n_iterations is {self.n_iterations}; weights "
                             "must count the iterations each point represents.")

    def __len__(self) -> int:
        return len(self.points)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "n_iterations": self.n_iterations,
                "points": [p.to_dict() for p in self.points], "meta": self.meta}


def write_seqpoints(points: SeqPoints, path: str | Path) -> Path:
    """Write ``points`` as SEQPOINTS.json."""
    return write_json(points.to_dict(), path)


def read_seqpoints(path: str | Path) -> SeqPoints:
    """Read and validate a SEQPOINTS.json file; a missing, undecodable or invalid file (a wrong
    type, a length out of range, weights not summing to ``n_iterations``) is one InputError
    line naming the file, the field and the fix."""
    from seqpoint.selection._schema import SeqPointsSchema

    data = read_json(path, what="SeqPoints file", made_by="seqpoint select")
    model = validate(SeqPointsSchema, data, source=str(path), fix="create it again with 'seqpoint select'")
    return SeqPoints(method=model.method, n_iterations=model.n_iterations, meta=model.meta,
                     points=tuple(SeqPoint(**p.model_dump()) for p in model.points))


def write_simpoints(seqpoints: SeqPoints, stem: str | Path) -> tuple[Path, Path]:
    """Write ``stem.simpoints`` and ``stem.weights`` (``stem`` a path without suffix) in
    SimPoint 3.0's format, point ``i`` as cluster ``i``; returns the two paths."""
    simpoints, weights = Path(f"{stem}.simpoints"), Path(f"{stem}.weights")
    n = float(seqpoints.n_iterations)
    write_text("".join(f"{p.iteration} {i}\n" for i, p in enumerate(seqpoints.points)), simpoints)
    write_text("".join(f"{p.weight / n!r} {i}\n" for i, p in enumerate(seqpoints.points)), weights)
    return simpoints, weights
