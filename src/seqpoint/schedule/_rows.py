"""Per-row lengths of every iteration: a ragged table beside the schedule.

The schedule's columns say what fixes an iteration's cost for padded kernels (batch
size, padded length). A training step that builds attention masks, CTC input/target
lengths or padding-free (varlen) kernels needs each sequence's own length as well.
:class:`RowLengths` holds them as one flat array cut at offsets (CSR layout), so a run
of 10^6 iterations costs two int64 arrays, not 10^6 Python lists. It is saved beside a
schedule file as ``<file>.rows.npz``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import InputError

__all__ = ["RowLengths", "read_rows", "rows_path", "write_rows"]

IntArray = NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class RowLengths:
    """Real (unpadded) length of every sequence of every iteration.

    Iteration ``i`` holds the sequences ``lengths[offsets[i]:offsets[i + 1]]``: one per
    sample of a padded batch, one per document of a packed row.

    Attributes
    ----------
    offsets : ndarray of shape (n_iterations + 1,), int64
        Starts of each iteration's sequences; ``offsets[0] == 0``, non-decreasing.
    lengths : ndarray of shape (n_sequences,), int64
        Source length of every sequence, tokens or frames.
    tgt_lengths : ndarray of shape (n_sequences,), int64, or None
        Target length of every sequence (encoder-decoder models), else None.
    """

    offsets: IntArray
    lengths: IntArray
    tgt_lengths: IntArray | None = None

    def __post_init__(self) -> None:
        for name in ("offsets", "lengths", "tgt_lengths"):
            value = getattr(self, name)
            if value is None:
                continue
            arr = np.asarray(value)
            if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
                raise InputError(f"RowLengths.{name} must be a 1-D integer array. Got {arr.dtype} of shape {arr.shape}.")
            object.__setattr__(self, name, np.ascontiguousarray(arr, dtype=np.int64))
        off, n = self.offsets, self.lengths.shape[0]
        if off.shape[0] < 1 or off[0] != 0 or off[-1] != n or np.any(np.diff(off) < 0):
            raise InputError(
                "RowLengths.offsets must start at 0, never decrease and end at the number of "
                f"lengths ({n}). Got {off.shape[0]} offsets ending at {int(off[-1]) if off.size else None}."
            )
        if np.any(self.lengths < 0) or (self.tgt_lengths is not None and np.any(self.tgt_lengths < 0)):
            raise InputError("RowLengths lengths must be >= 0.")
        if self.tgt_lengths is not None and self.tgt_lengths.shape[0] != n:
            raise InputError(
                f"RowLengths.tgt_lengths has {self.tgt_lengths.shape[0]} entries; expected {n} like lengths."
            )

    @classmethod
    def from_order(
        cls,
        order: NDArray[np.integer],
        offsets: NDArray[np.integer],
        src_lengths: NDArray[np.integer],
        tgt_lengths: NDArray[np.integer] | None = None,
    ) -> RowLengths:
        """The rows of batches given as sample indices ``order`` cut at ``offsets``."""
        idx = np.asarray(order, dtype=np.int64)
        tgt = None if tgt_lengths is None else np.asarray(tgt_lengths, dtype=np.int64)[idx]
        return cls(np.asarray(offsets, dtype=np.int64), np.asarray(src_lengths, dtype=np.int64)[idx], tgt)

    @classmethod
    def from_lists(cls, lengths: list[Any], tgt_lengths: list[Any] | None = None) -> RowLengths:
        """From one sequence of lengths per iteration (and optionally of target lengths)."""
        sizes = np.fromiter((len(x) for x in lengths), dtype=np.int64, count=len(lengths))
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        flat = np.concatenate([np.asarray(x, dtype=np.int64) for x in lengths]) if lengths else np.zeros(0, np.int64)
        tgt = None
        if tgt_lengths is not None:
            tgt = np.concatenate([np.asarray(x, dtype=np.int64) for x in tgt_lengths]) if tgt_lengths else np.zeros(0, np.int64)
        return cls(offsets, flat, tgt)

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def n_iterations(self) -> int:
        """Iterations (rows of the schedule) covered."""
        return len(self)

    def row(self, i: int) -> tuple[IntArray, IntArray | None]:
        """``(lengths, tgt_lengths)`` of iteration ``i`` (position in the schedule)."""
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.lengths[lo:hi], None if self.tgt_lengths is None else self.tgt_lengths[lo:hi]

    def take(self, rows: Any) -> RowLengths:
        """The rows of the given iterations (indices or boolean mask), in that order."""
        idx = np.arange(len(self))[np.asarray(rows)]
        starts = self.offsets[:-1][idx]
        counts = np.diff(self.offsets)[idx]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        # Each kept iteration's slice, gathered in one vectorised index.
        gather = np.repeat(starts - offsets[:-1], counts) + np.arange(int(offsets[-1]))
        tgt = None if self.tgt_lengths is None else self.tgt_lengths[gather]
        return RowLengths(offsets, self.lengths[gather], tgt)

    def equals(self, other: RowLengths) -> bool:
        """Same offsets, lengths and target lengths."""
        if (self.tgt_lengths is None) != (other.tgt_lengths is None):
            return False
        same_tgt = (
            self.tgt_lengths is None or other.tgt_lengths is None
            or np.array_equal(self.tgt_lengths, other.tgt_lengths)
        )
        return same_tgt and np.array_equal(self.offsets, other.offsets) and np.array_equal(self.lengths, other.lengths)


def rows_path(path: str | Path) -> Path:
    """The sidecar of a schedule or trace file: ``<file>.rows.npz``."""
    path = Path(path)
    return path.with_name(path.name + ".rows.npz")


def write_rows(rows: RowLengths | None, path: str | Path) -> Path | None:
    """Write ``rows`` beside the file ``path``; with None remove a stale sidecar there."""
    side = rows_path(path)
    if rows is None:
        side.unlink(missing_ok=True)  # an old file's rows must not attach to a new file
        return None
    arrays = {"offsets": rows.offsets, "lengths": rows.lengths}
    if rows.tgt_lengths is not None:
        arrays["tgt_lengths"] = rows.tgt_lengths
    with side.open("wb") as fh:
        np.savez_compressed(fh, **arrays)  # type: ignore[arg-type]
    return side


def read_rows(path: str | Path, n_iterations: int) -> RowLengths | None:
    """The sidecar rows of the file ``path`` (None when it has none).

    Raises
    ------
    InputError
        The sidecar is not an ``.npz`` of integer arrays or covers another number of
        iterations than the file beside it; the message names it and says to delete it.
    """
    side = rows_path(path)
    if not side.is_file():
        return None
    fix = f"delete {side} (the file beside it still reads) or write both again"
    try:
        with np.load(side, allow_pickle=False) as data:
            arrays = {k: np.asarray(data[k]) for k in ("offsets", "lengths", "tgt_lengths") if k in data.files}
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(f"{side}: not a per-row lengths file ({' '.join(str(exc).split())[:200]}); {fix}.") from None
    if "offsets" not in arrays or "lengths" not in arrays:
        raise InputError(f"{side}: lacks the arrays 'offsets' and 'lengths'; {fix}.")
    try:
        rows = RowLengths(arrays["offsets"], arrays["lengths"], arrays.get("tgt_lengths"))
    except InputError as exc:
        raise InputError(f"{side}: {exc} {fix[0].upper()}{fix[1:]}.") from None
    if len(rows) != n_iterations:
        raise InputError(f"{side} covers {len(rows)} iterations but {path} has {n_iterations}; {fix}.")
    return rows
