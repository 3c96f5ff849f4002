"""Check that SeqPoints belong to a schedule and pair them with their measurements."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import NDArray

from seqpoint._signature import SIGNATURE_FIELDS
from seqpoint.exceptions import InputError
from seqpoint.measurements import Measurement, Measurements
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints

__all__ = ["check_fit", "match_measurements", "seqpoint_rows"]


def seqpoint_rows(schedule: IterationSchedule, seqpoints: SeqPoints, *, context: str = "") -> NDArray[np.int64]:
    """Row positions of the SeqPoints in ``schedule``; InputError unless they belong to it
    (same iteration count, every point's iteration present with the same signature).
    ``context`` names the files that disagree ("sp.json does not fit s.csv")."""
    n = len(schedule)
    if seqpoints.n_iterations != n:
        raise _mismatch(context, f"The SeqPoints were chosen for {seqpoints.n_iterations} iterations but the "
                                 f"schedule has {n}; run 'seqpoint select' on this schedule.")
    order = np.argsort(schedule.iteration, kind="stable")
    sorted_ids = schedule.iteration[order]
    pos = np.searchsorted(sorted_ids, np.array([p.iteration for p in seqpoints.points], dtype=np.int64))
    rows = np.empty(pos.shape[0], dtype=np.int64)
    lo, hi = int(sorted_ids[0]), int(sorted_ids[-1])
    for i, (p, q) in enumerate(zip(seqpoints.points, pos.tolist(), strict=True)):
        if q >= n or sorted_ids[q] != p.iteration:
            raise _mismatch(context, f"SeqPoint {i} has iteration {p.iteration}, which is not in the schedule "
                                     f"(iterations {lo}..{hi}); the SeqPoints belong to another schedule.")
        r = rows[i] = int(order[q])
        want = p.signature if (schedule.is_packed and p.sum_sq_len is not None) else p.signature[:3]
        have = tuple(int(getattr(schedule, c)[r]) for c in SIGNATURE_FIELDS[: len(want)])
        if have != want:
            raise _mismatch(context, f"SeqPoint {i} (iteration {p.iteration}) has signature {want} but the schedule's "
                                     f"iteration {p.iteration} has {have}; the SeqPoints belong to another schedule.")
    return rows


def match_measurements(seqpoints: SeqPoints, measurements: Measurements | Iterable[Measurement], *,
                       source: str = "measurements", context: str = "") -> list[Measurement]:
    """The measurement of every SeqPoint, matched by signature, in point order; InputError
    when one has none (``context`` as for :func:`seqpoint_rows`)."""
    items = measurements.measurements if isinstance(measurements, Measurements) else tuple(measurements)
    by_sig: dict[tuple[int, ...], Measurement] = {}
    for m in items:
        by_sig[m.signature] = m
        # Unpacked measurements match points that carry no sum_sq_len, and vice versa.
        by_sig.setdefault(m.signature[:3], m)
    out: list[Measurement] = []
    for i, p in enumerate(seqpoints.points):
        found = by_sig.get(p.signature)
        if found is None:
            raise _mismatch(context, f"The {source} have no entry for SeqPoint {i} (iteration {p.iteration}, "
                                     f"signature {p.signature}); profile the SeqPoints with 'seqpoint profile'.")
        out.append(found)
    return out


def _mismatch(context: str, message: str) -> InputError:
    return InputError(f"{context}. {message}" if context else message)


def check_fit(schedule: IterationSchedule, seqpoints: SeqPoints, measurements: Measurements | None = None, *,
              names: tuple[str, str, str] = ("the schedule", "the SeqPoints", "the measurements")) -> None:
    """One InputError naming the two files that disagree (``names``: the schedule's, the
    SeqPoints' and the measurements'), said before anything is projected."""
    seqpoint_rows(schedule, seqpoints, context=f"{names[1]} does not fit {names[0]}")
    if measurements is not None:
        match_measurements(seqpoints, measurements, context=f"{names[2]} does not fit {names[1]}")
