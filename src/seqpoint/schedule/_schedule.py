"""The IterationSchedule: one row per training iteration, the shapes that fix its cost; and the
fast collapse of its signature columns to their unique rows (:func:`unique_rows`)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from seqpoint._signature import SIGNATURE_FIELDS, IntArray
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.schedule._rows import RowLengths

__all__ = ["COLUMNS", "RANK_COLUMN", "SIGNATURE_COLUMNS", "IterationSchedule",
           "rank_layout_error", "round_up", "set_columns", "unique_rows"]

#: Column order of the schedule, as in the CSV header of the command-line contract.
COLUMNS: tuple[str, ...] = ("iteration", "epoch", "batch_size", "seq_len", "tgt_len", "tokens",
                            "padded_tokens", "sum_sq_len")

#: The optional column of a data-parallel schedule, written after :data:`COLUMNS`.
RANK_COLUMN = "rank"

#: The tuple that fixes an iteration's cost for padded batches.
SIGNATURE_COLUMNS: tuple[str, ...] = SIGNATURE_FIELDS[:3]


def round_up(x: IntArray, multiple: int) -> IntArray:
    """Round every element of ``x`` up to a multiple of ``multiple`` (1 leaves it as is)."""
    return x if multiple <= 1 else -(-x // multiple) * multiple


def set_columns(obj: object, names: Sequence[str], *, what: str, dtypes: Mapping[str, type] | None = None) -> int:
    """Make each named attribute of a frozen dataclass (None ones skipped) a contiguous 1-D
    array of as many rows as the first; return the rows. ``what`` names the table in errors."""
    n: int | None = None
    for name in names:
        if (value := getattr(obj, name)) is None:
            continue
        arr: NDArray[Any] = np.ascontiguousarray(value, dtype=(dtypes or {}).get(name, np.int64))
        if arr.ndim != 1:
            raise InputError(f"{what} column {name!r} must be 1-D. Got shape {arr.shape}.")
        if n is None:
            n = arr.shape[0]
        elif arr.shape[0] != n:
            raise InputError(f"{what} column {name!r} has {arr.shape[0]} rows; expected {n} like 'iteration'.")
        object.__setattr__(obj, name, arr)
    return n or 0


@dataclass(frozen=True, eq=False)
class IterationSchedule:
    """Exact sequence of batch shapes a training run sees, one row per iteration; every
    column is an int64 array of shape ``(n_iterations,)``."""

    iteration: IntArray
    """Global iteration index, 0-based, increasing."""
    epoch: IntArray
    """Epoch of the iteration, 0-based."""
    batch_size: IntArray
    """Sequences (samples, or packed rows) in the batch."""
    seq_len: IntArray
    """Padded source length of the batch, tokens or frames."""
    tgt_len: IntArray
    """Padded target length (encoder-decoder models); 0 for single-sequence models."""
    tokens: IntArray
    """Real (unpadded) source plus target tokens in the batch."""
    padded_tokens: IntArray
    """``batch_size * (seq_len + tgt_len)``: tokens the model actually computes on."""
    sum_sq_len: IntArray
    """Sum of the sequences' (packed: documents') squared real source lengths."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Free-form provenance (policy, parameters, source); saved beside the data."""
    rank: IntArray | None = None
    """Data-parallel rank of every row (``world_size`` rows per iteration, ranks in order)."""
    rows: RowLengths | None = field(default=None, init=False, repr=False, compare=False)
    """Real length of every sequence of every iteration, when known; set with :meth:`with_rows`,
    so ``IterationSchedule(**cols)`` never carries stale rows."""

    def __post_init__(self) -> None:
        if set_columns(self, (*COLUMNS, RANK_COLUMN), what="Schedule") == 0:
            raise InputError("The schedule is empty: the batching produced no iteration.")
        for name, why in (("batch_size", "every batch needs a sequence"), ("seq_len", "lengths must be positive")):
            low = np.flatnonzero(getattr(self, name) < 1)
            if low.size:
                raise InputError(f"Schedule row {int(low[0])} has {name} < 1; {why}.")
        if np.any(self.tgt_len < 0) or np.any(self.tokens < 0) or np.any(self.sum_sq_len < 0):
            raise InputError("Schedule columns tgt_len, tokens and sum_sq_len must be >= 0.")
        if self.rank is not None:
            problem = rank_layout_error(self.iteration, self.rank, self.meta.get("world_size"))
            if problem is not None:
                raise InputError(f"Schedule {problem}.")

    @classmethod
    def from_columns(cls, columns: Mapping[str, Any], meta: dict[str, Any] | None = None) -> IterationSchedule:
        """Build from columns; only ``batch_size`` and ``seq_len`` are required (``iteration``
        ``0..n-1``, ``epoch``/``tgt_len`` 0, ``tokens = padded_tokens``, ``sum_sq_len = b·s²``)."""
        for req in ("batch_size", "seq_len"):
            if req not in columns:
                raise InputError(f"Schedule is missing the column {req!r}; expected the header "
                                 f"{','.join(COLUMNS)}.")
        bs = np.asarray(columns["batch_size"], dtype=np.int64)
        sl = np.asarray(columns["seq_len"], dtype=np.int64)
        n = bs.shape[0]
        tl = np.asarray(columns.get("tgt_len", np.zeros(n)), dtype=np.int64)
        padded = columns.get("padded_tokens", bs * (sl + tl))
        # __post_init__ makes every column int64.
        cols = {"iteration": np.arange(n), "epoch": np.zeros(n), "tokens": padded,
                "sum_sq_len": bs * sl * sl, **{c: columns[c] for c in COLUMNS if c in columns},
                "tgt_len": tl, "padded_tokens": padded}
        return cls(**cols, meta=dict(meta or {}))

    def __len__(self) -> int:
        return int(self.iteration.shape[0])

    @property
    def n_iterations(self) -> int:
        return len(self)

    @property
    def n_epochs(self) -> int:
        return int(np.unique(self.epoch).shape[0])

    @property
    def is_packed(self) -> bool:
        """True when rows are packed documents (``sum_sq_len`` then varies at fixed shape)."""
        return bool(self.meta.get("packed", False))

    def columns(self) -> dict[str, IntArray]:
        """Ordered mapping of column name to array (the contract's, without ``rank``)."""
        return {name: getattr(self, name) for name in COLUMNS}

    def file_columns(self) -> dict[str, IntArray]:
        """:meth:`columns` plus ``rank`` last when present: what a schedule file holds."""
        cols = self.columns()
        if self.rank is not None:
            cols[RANK_COLUMN] = self.rank
        return cols

    @property
    def world_size(self) -> int:
        """Data-parallel ranks (1 for a single-process schedule)."""
        return 1 if self.rank is None else int(self.meta.get("world_size", int(self.rank.max()) + 1))

    @property
    def n_steps(self) -> int:
        """Training steps: rows over the world size (``n_iterations`` when single-process)."""
        return len(self) // self.world_size

    def for_rank(self, rank: int) -> IterationSchedule:
        """The rows of one rank (in ``0..world_size-1``) as a single-process schedule."""
        w = self.world_size
        if not 0 <= rank < w:
            raise ConfigError(f"Rank {rank} is not below the world size {w}; give a rank in 0..{w - 1}.")
        if self.rank is None:
            return self
        idx = np.flatnonzero(self.rank == rank)
        cols = {name: arr[idx] for name, arr in self.columns().items()}
        kept = None if self.rows is None else self.rows.take(idx)
        return IterationSchedule(**cols, meta={**self.meta, "rank": int(rank)}).with_rows(kept)

    def rank_rows(self) -> IterationSchedule:
        """Every rank row as an iteration of its own, without the rank column (row ``i`` stays
        row ``i``, so a cost per row reshapes to ``(n_steps, world_size)``)."""
        if self.rank is None:
            return self
        flat = IterationSchedule(**{**self.columns(), "iteration": np.arange(len(self), dtype=np.int64)},
                                 meta={**self.meta, "rank_rows": True, "world_size": self.world_size})
        return flat.with_rows(self.rows)

    def signature_columns(self) -> tuple[str, ...]:
        """Columns whose tuple fixes an iteration's cost (adds ``sum_sq_len`` when packed)."""
        return SIGNATURE_FIELDS if self.is_packed else SIGNATURE_COLUMNS

    def signature_matrix(self) -> IntArray:
        """Signatures as an int64 array of shape ``(n_iterations, n_signature_columns)``."""
        return np.stack([getattr(self, c) for c in self.signature_columns()], axis=1)

    def unique_signatures(self) -> tuple[IntArray, IntArray, IntArray]:
        """Unique signatures (sorted), their counts and the inverse map, as in :class:`SignatureTable`."""
        return unique_rows([getattr(self, c) for c in self.signature_columns()])

    def take(self, rows: ArrayLike) -> IterationSchedule:
        """Sub-schedule of the given rows (indices or boolean mask); iteration ids are kept."""
        idx = np.asarray(rows)
        cols = {name: arr[idx] for name, arr in self.file_columns().items()}
        kept = None if self.rows is None else self.rows.take(idx)
        return IterationSchedule(**cols, meta=dict(self.meta)).with_rows(kept)

    def with_rows(self, rows: RowLengths | None) -> IterationSchedule:
        """This schedule with ``rows`` (of as many iterations) as its per-row lengths."""
        if rows is not None and len(rows) != len(self):
            raise InputError(f"The schedule's per-row lengths cover {len(rows)} iterations; expected {len(self)}.")
        out = copy.copy(self)
        object.__setattr__(out, "rows", rows)
        return out

    def head(self, n: int) -> IterationSchedule:
        """The first ``n`` iterations (every rank's row of each, for a data-parallel schedule)."""
        return self.take(np.arange(min(n * self.world_size, len(self))))

    def epochs(self, first: int) -> IterationSchedule:
        """Iterations of the first ``first`` epochs."""
        return self.take(self.epoch < int(self.epoch.min()) + first)

    def __repr__(self) -> str:
        return (f"IterationSchedule(n_iterations={len(self)}, n_epochs={self.n_epochs}, "
                f"seq_len=[{int(self.seq_len.min())}..{int(self.seq_len.max())}], meta={self.meta!r})")

    def equals(self, other: IterationSchedule) -> bool:
        """Column-wise equality, ``rank`` included (meta ignored)."""
        mine, theirs = self.file_columns(), other.file_columns()
        return mine.keys() == theirs.keys() and all(np.array_equal(mine[c], theirs[c]) for c in mine)


def rank_layout_error(iteration: IntArray, rank: IntArray, world_size: int | None = None) -> str | None:
    """A phrase naming the first row that breaks the rank layout, or None: ``world_size``
    (default: largest rank + 1) rows per iteration, ranks in order, iterations increasing."""
    n = int(rank.shape[0])
    if n == 0:
        return None
    if int(rank.min()) < 0:
        return f"row {int(np.argmin(rank))}: rank must be >= 0 (got {int(rank.min())})"
    w = int(rank.max()) + 1 if world_size is None else int(world_size)
    layout = f"a data-parallel schedule has {w} rows per iteration, ranks 0..{w - 1} in order"
    if int(rank.max()) >= w:
        i = int(np.argmax(rank))
        return f"row {i}: rank {int(rank[i])} is not below the world size {w} ({layout})"
    expected = np.arange(n, dtype=np.int64) % w
    same_step = np.ones(n, dtype=bool)
    # A group starts at every rank-0 row; inside it the iteration id must not change.
    same_step[1:] = (expected[1:] == 0) | (iteration[1:] == iteration[:-1])
    bad = (rank != expected) | ~same_step
    if bad.any() or n % w:
        i = int(np.flatnonzero(bad)[0]) if bad.any() else n  # row n: the last step is short
        start = i - i % w
        return f"iteration {int(iteration[start])} (row {start}) lacks the row of rank {i % w} ({layout})"
    steps = iteration[::w]
    if steps.shape[0] > 1 and np.any(np.diff(steps) <= 0):
        i = int(np.flatnonzero(np.diff(steps) <= 0)[0]) + 1
        return f"row {i * w} (iteration {int(steps[i])}): iterations must increase from one step to the next"
    return None


# Counting with bincount beats sorting while the key range stays within a few times
# the number of rows; the cap bounds the temporary count array (8 bytes per slot).
_MAX_BINCOUNT_RANGE = 1 << 25


def _dense(key: IntArray) -> tuple[IntArray, IntArray]:
    """Dense ids (0..u-1, in increasing key order) and the distinct keys."""
    lo = int(key.min())
    span = int(key.max()) - lo + 1
    if span <= max(2 * key.shape[0], 1 << 16) and span <= _MAX_BINCOUNT_RANGE:
        shifted = key - lo
        counts = np.bincount(shifted, minlength=span)
        present = np.flatnonzero(counts)
        remap = np.full(span, -1, dtype=np.int64)
        remap[present] = np.arange(present.shape[0], dtype=np.int64)
        return remap[shifted], present.astype(np.int64) + lo
    uniq, inverse = np.unique(key, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), uniq.astype(np.int64)


def unique_rows(columns: Sequence[IntArray]) -> tuple[IntArray, IntArray, IntArray]:
    """Unique rows (sorted), counts and inverse map of the matrix whose columns (at least one,
    ``n >= 1`` rows, first most significant) are ``columns``, like ``np.unique(axis=0)``, which
    takes seconds on 10M rows: here the columns are packed into one int64 key (mixed radix, same
    lexicographic order), counted without a sort when its range is small."""
    assert len(columns) >= 1
    key: IntArray | None = None
    for col in columns:
        lo = int(col.min())
        span = int(col.max()) - lo + 1
        if key is None:
            key = col - lo
            continue
        # Mixed radix: key * span + col keeps lexicographic order; densify first if
        # the product could overflow int64.
        if (int(key.max()) + 1) * span >= 2**62:
            key, _ = _dense(key)
        key = key * span + (col - lo)
    assert key is not None
    inverse, _ = _dense(key)
    counts = np.bincount(inverse).astype(np.int64)
    # One representative row per unique key gives the row's values.
    first = np.empty(counts.shape[0], dtype=np.int64)
    first[inverse[::-1]] = np.arange(inverse.shape[0] - 1, -1, -1, dtype=np.int64)
    rows = np.stack([np.asarray(col)[first] for col in columns], axis=1).astype(np.int64)
    return rows, counts, inverse
