"""Per-row lengths of every iteration (for masks, CTC lengths, varlen kernels): a ragged
table in CSR layout beside the schedule, saved as ``<file>.rows.npz``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from seqpoint._signature import IntArray
from seqpoint.exceptions import InputError

__all__ = ["RowLengths", "read_rows", "rows_path", "write_rows"]

_Row = Sequence[int] | NDArray[np.integer]
_ARRAYS = ("offsets", "lengths", "tgt_lengths", "row_of")


@dataclass(frozen=True, eq=False)
class RowLengths:
    """Real (unpadded) length of every sequence of every iteration: iteration ``i`` holds
    ``lengths[offsets[i]:offsets[i + 1]]`` (a padded batch's samples, a packed row's documents)."""

    offsets: IntArray
    """Starts of each iteration's sequences, shape ``(n_iterations + 1,)``: from 0, non-decreasing."""
    lengths: IntArray
    """Source length of every sequence, shape ``(n_sequences,)``, tokens or frames."""
    tgt_lengths: IntArray | None = None
    """Target length of every sequence (encoder-decoder models), else None."""
    row_of: IntArray | None = None
    """Packed batches only: the row (``0..batch_size-1``) holding each document piece,
    non-decreasing within an iteration; None when every sequence is its own row."""

    def __post_init__(self) -> None:
        for name in _ARRAYS:
            if (value := getattr(self, name)) is None:
                continue
            arr = np.asarray(value)
            if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
                raise InputError(f"RowLengths.{name} must be a 1-D integer array. Got {arr.dtype} of shape {arr.shape}.")
            object.__setattr__(self, name, np.ascontiguousarray(arr, dtype=np.int64))
        off, n = self.offsets, self.lengths.shape[0]
        if off.shape[0] < 1 or off[0] != 0 or off[-1] != n or np.any(np.diff(off) < 0):
            raise InputError(f"RowLengths.offsets must start at 0, never decrease and end at the number of lengths "
                             f"({n}). Got {off.shape[0]} offsets ending at {int(off[-1]) if off.size else None}.")
        if np.any(self.lengths < 0) or (self.tgt_lengths is not None and np.any(self.tgt_lengths < 0)):
            raise InputError("RowLengths lengths must be >= 0.")
        if self.tgt_lengths is not None and self.tgt_lengths.shape[0] != n:
            raise InputError(f"RowLengths.tgt_lengths has {self.tgt_lengths.shape[0]} entries; "
                             f"expected {n} like lengths.")
        if self.row_of is not None:
            ro = self.row_of
            # A row index may fall only where a new iteration starts.
            starts = np.zeros(n, dtype=bool)
            starts[off[:-1][off[:-1] < n]] = True
            if ro.shape[0] != n or np.any(ro < 0) or np.any((np.diff(ro) < 0) & ~starts[1:]):
                raise InputError("RowLengths.row_of must hold one row index >= 0 per length "
                                 f"({n}), non-decreasing within each iteration.")

    @classmethod
    def from_order(cls, order: NDArray[np.integer], offsets: NDArray[np.integer], src_lengths: NDArray[np.integer],
                   tgt_lengths: NDArray[np.integer] | None = None) -> RowLengths:
        """The rows of batches given as sample indices ``order`` cut at ``offsets``."""
        idx = np.asarray(order, dtype=np.int64)
        tgt = None if tgt_lengths is None else np.asarray(tgt_lengths, dtype=np.int64)[idx]
        return cls(np.asarray(offsets, dtype=np.int64), np.asarray(src_lengths, dtype=np.int64)[idx], tgt)

    @classmethod
    def from_lists(cls, lengths: Sequence[_Row], tgt_lengths: Sequence[_Row] | None = None) -> RowLengths:
        """From one sequence of lengths per iteration (and optionally of target lengths)."""
        def flat(rows: Sequence[_Row]) -> IntArray:
            return np.concatenate([np.asarray(x, dtype=np.int64) for x in rows]) if rows else np.zeros(0, np.int64)

        sizes = np.fromiter((len(x) for x in lengths), dtype=np.int64, count=len(lengths))
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        return cls(offsets, flat(lengths), None if tgt_lengths is None else flat(tgt_lengths))

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def n_iterations(self) -> int:
        return len(self)

    def row(self, i: int) -> tuple[IntArray, IntArray | None]:
        """``(lengths, tgt_lengths)`` of iteration ``i`` (position in the schedule)."""
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.lengths[lo:hi], None if self.tgt_lengths is None else self.tgt_lengths[lo:hi]

    def flattened(self, batch_size: IntArray) -> bool:
        """True when some iteration is one row of several documents (padding-free packing)."""
        return bool(np.any((np.asarray(batch_size) == 1) & (np.diff(self.offsets) > 1)))

    def packed_row_of(self, i: int) -> IntArray | None:
        """The packed row of each sequence of iteration ``i``, or None (see ``row_of``)."""
        return None if self.row_of is None else self.row_of[int(self.offsets[i]):int(self.offsets[i + 1])]

    def take(self, rows: ArrayLike) -> RowLengths:
        """The rows of the given iterations (indices or boolean mask), in that order."""
        idx = np.arange(len(self))[np.asarray(rows)]
        starts = self.offsets[:-1][idx]
        counts = np.diff(self.offsets)[idx]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        # Each kept iteration's slice, gathered in one vectorised index.
        gather = np.repeat(starts - offsets[:-1], counts) + np.arange(int(offsets[-1]))
        tgt = None if self.tgt_lengths is None else self.tgt_lengths[gather]
        row_of = None if self.row_of is None else self.row_of[gather]
        return RowLengths(offsets, self.lengths[gather], tgt, row_of)

    def mismatch(self, batch_size: IntArray, seq_len: IntArray, tgt_len: IntArray | None) -> tuple[int, str] | None:
        """The first schedule row these lengths do not fit, and what they break there; or None. A padded batch
        holds ``batch_size`` lengths, none past the padding; a packed batch at most ``seq_len`` tokens per row;
        one row of several lengths (padding-free documents) at most ``seq_len`` tokens in all."""
        n, counts = len(self), np.diff(self.offsets)
        owner = np.repeat(np.arange(n), counts)  # the schedule row of every length
        packed = self.row_of is not None
        flat = np.zeros(n, dtype=bool)
        if not packed:
            flat = (batch_size == 1) & (counts > 1)  # one row of documents
            size = np.where(flat, 1, counts)
            longest = _most(self.lengths, owner, n)
            if flat.any():
                fill = np.bincount(owner, weights=self.lengths, minlength=n).astype(np.int64)
                longest = np.where(flat, fill, longest)
        else:
            assert self.row_of is not None
            size = _most(self.row_of + 1, owner, n)
            # One fill per packed row: runs of equal (schedule row, packed row), summed.
            new = np.ones(owner.shape[0], dtype=bool)
            new[1:] = (owner[1:] != owner[:-1]) | (self.row_of[1:] != self.row_of[:-1])
            starts = np.flatnonzero(new)
            fills = np.add.reduceat(self.lengths, starts) if starts.size else self.lengths
            longest = _most(fills, owner[starts], n)
        checks = [(size > batch_size if packed else size != batch_size, size, "batch_size", batch_size,
                   "{} packed rows" if packed else "{} sequences"),
                  (longest > seq_len, longest, "seq_len", seq_len,
                   "a packed row of {} tokens" if packed else "a sequence of {} tokens")]
        if self.tgt_lengths is not None and tgt_len is not None and not packed:
            most = _most(self.tgt_lengths, owner, n)
            checks.append((most > tgt_len, most, "tgt_len", tgt_len, "a target of {} tokens"))
        bad = np.flatnonzero(np.any([c[0] for c in checks], axis=0))
        if not bad.size:
            return None
        i = int(bad[0])
        _, got, column, want, what = next(c for c in checks if c[0][i])
        if flat[i] and column == "seq_len":
            what = "documents of {} tokens in all"
        return i, f"{what.format(int(got[i]))}, but the row's {column} is {int(want[i])}"

    def equals(self, other: RowLengths) -> bool:
        """Same offsets, lengths, target lengths and packed rows."""
        pairs = [(getattr(self, name), getattr(other, name)) for name in _ARRAYS]
        return all((a is None) == (b is None) and (a is None or np.array_equal(a, b)) for a, b in pairs)


def _most(values: IntArray, owner: IntArray, n: int) -> IntArray:
    """The largest of ``values`` per schedule row (``owner`` non-decreasing), 0 for none."""
    counts = np.bincount(owner, minlength=n)
    out = np.zeros(n, dtype=np.int64)
    some = counts > 0
    if some.any():
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        out[some] = np.maximum.reduceat(values, starts[some])
    return out


def rows_path(path: str | Path) -> Path:
    """The sidecar of a schedule or trace file: ``<file>.rows.npz``."""
    return Path(path).with_name(Path(path).name + ".rows.npz")


def write_rows(rows: RowLengths | None, path: str | Path) -> Path | None:
    """Write ``rows`` beside the file ``path``; with None remove a stale sidecar there."""
    side = rows_path(path)
    if rows is None:
        side.unlink(missing_ok=True)  # an old file's rows must not attach to a new file
        return None
    arrays = {name: value for name in _ARRAYS if (value := getattr(rows, name)) is not None}
    with side.open("wb") as fh:
        np.savez_compressed(fh, **arrays)  # type: ignore[arg-type]
    return side


def read_rows(path: str | Path, n_iterations: int) -> RowLengths | None:
    """The sidecar rows of the file ``path`` (None when it has none); a bad sidecar is one
    InputError that says to delete it."""
    side = rows_path(path)
    if not side.is_file():
        return None
    fix = f"delete {side} (the file beside it still reads) or write both again"
    try:
        with np.load(side, allow_pickle=False) as data:
            arrays = {k: np.asarray(data[k]) for k in _ARRAYS if k in data.files}
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(f"{side}: not a per-row lengths file ({' '.join(str(exc).split())[:200]}); {fix}.") from None
    if "offsets" not in arrays or "lengths" not in arrays:
        raise InputError(f"{side}: lacks the arrays 'offsets' and 'lengths'; {fix}.")
    try:
        rows = RowLengths(**arrays)
    except InputError as exc:
        raise InputError(f"{side}: {exc} {fix[0].upper()}{fix[1:]}.") from None
    if len(rows) != n_iterations:
        raise InputError(f"{side} covers {len(rows)} iterations but {path} has {n_iterations}; {fix}.")
    return rows
