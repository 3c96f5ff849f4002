"""The IterationSchedule: one row per training iteration, the shapes that fix its cost."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import InputError
from seqpoint.schedule._collapse import unique_rows
from seqpoint.schedule._rows import RowLengths

__all__ = ["COLUMNS", "SIGNATURE_COLUMNS", "IterationSchedule", "round_up", "set_columns"]

#: Column order of the schedule, as in the CSV header of the command-line contract.
COLUMNS: tuple[str, ...] = (
    "iteration",
    "epoch",
    "batch_size",
    "seq_len",
    "tgt_len",
    "tokens",
    "padded_tokens",
    "sum_sq_len",
)

#: The tuple that fixes an iteration's cost for padded batches.
SIGNATURE_COLUMNS: tuple[str, ...] = ("batch_size", "seq_len", "tgt_len")

IntArray = NDArray[np.int64]


def round_up(x: IntArray, multiple: int) -> IntArray:
    """Round every element of ``x`` up to a multiple of ``multiple`` (1 leaves it as is)."""
    if multiple <= 1:
        return x
    return -(-x // multiple) * multiple


def set_columns(
    obj: object, names: Sequence[str], *, what: str, dtypes: Mapping[str, type] | None = None
) -> int:
    """Make each named attribute of a frozen dataclass a contiguous 1-D array; return the rows.

    Attributes that are None are left alone (optional columns). Every column must have as
    many rows as the first one (``iteration``); a mismatch or a column that is not 1-D is
    one :class:`InputError` naming the column (``what`` names the table in the message).
    """
    n: int | None = None
    for name in names:
        value = getattr(obj, name)
        if value is None:
            continue
        arr: NDArray[Any] = np.ascontiguousarray(value, dtype=(dtypes or {}).get(name, np.int64))
        if arr.ndim != 1:
            raise InputError(f"{what} column {name!r} must be 1-D. Got shape {arr.shape}.")
        if n is None:
            n = arr.shape[0]
        elif arr.shape[0] != n:
            raise InputError(
                f"{what} column {name!r} has {arr.shape[0]} rows; expected {n} like 'iteration'."
            )
        object.__setattr__(obj, name, arr)
    return n or 0


@dataclass(frozen=True, eq=False)
class IterationSchedule:
    """Exact sequence of batch shapes a training run sees, one row per iteration.

    Every column is an int64 array of shape ``(n_iterations,)``.

    Attributes
    ----------
    iteration : ndarray
        Global iteration index, 0-based, increasing.
    epoch : ndarray
        Epoch the iteration belongs to, 0-based.
    batch_size : ndarray
        Sequences (samples, or packed rows) in the batch.
    seq_len : ndarray
        Padded source length of the batch, tokens or frames.
    tgt_len : ndarray
        Padded target length (encoder-decoder models); 0 for single-sequence models.
    tokens : ndarray
        Real (unpadded) source plus target tokens in the batch.
    padded_tokens : ndarray
        ``batch_size * (seq_len + tgt_len)``: tokens the model actually computes on.
    sum_sq_len : ndarray
        Sum over sequences (documents for packing) of their squared real source
        length: the attention cost with per-document masking.
    meta : dict
        Free-form provenance (policy, parameters, source); saved beside the data.
    rows : RowLengths or None
        Real length of every sequence of every iteration (masks, CTC lengths, varlen
        kernels), when the source knows them; saved as ``<file>.rows.npz``.
    """

    iteration: IntArray
    epoch: IntArray
    batch_size: IntArray
    seq_len: IntArray
    tgt_len: IntArray
    tokens: IntArray
    padded_tokens: IntArray
    sum_sq_len: IntArray
    meta: dict[str, Any] = field(default_factory=dict)
    # Not an init argument: set with with_rows(), so building from a dict of columns
    # (IterationSchedule(**cols)) stays typed and a copy never carries stale rows.
    rows: RowLengths | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = set_columns(self, COLUMNS, what="Schedule")
        if n == 0:
            raise InputError("The schedule is empty: the batching produced no iteration.")
        if np.any(self.batch_size < 1):
            bad = int(np.flatnonzero(self.batch_size < 1)[0])
            raise InputError(f"Schedule row {bad} has batch_size < 1; every batch needs a sequence.")
        if np.any(self.seq_len < 1):
            bad = int(np.flatnonzero(self.seq_len < 1)[0])
            raise InputError(f"Schedule row {bad} has seq_len < 1; lengths must be positive.")
        if np.any(self.tgt_len < 0) or np.any(self.tokens < 0) or np.any(self.sum_sq_len < 0):
            raise InputError("Schedule columns tgt_len, tokens and sum_sq_len must be >= 0.")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_columns(
        cls, columns: Mapping[str, Any], meta: dict[str, Any] | None = None
    ) -> IterationSchedule:
        """Build from a mapping of column name to array; missing derived columns are filled.

        ``batch_size`` and ``seq_len`` are required. ``iteration`` defaults to
        ``0..n-1``, ``epoch`` and ``tgt_len`` to 0, ``padded_tokens`` to
        ``batch_size*(seq_len+tgt_len)``, ``tokens`` to ``padded_tokens`` and
        ``sum_sq_len`` to ``batch_size*seq_len**2``.
        """
        for req in ("batch_size", "seq_len"):
            if req not in columns:
                raise InputError(
                    f"Schedule is missing the column {req!r}; expected the header "
                    f"{','.join(COLUMNS)}."
                )
        bs = np.asarray(columns["batch_size"], dtype=np.int64)
        sl = np.asarray(columns["seq_len"], dtype=np.int64)
        n = bs.shape[0]
        tl = np.asarray(columns.get("tgt_len", np.zeros(n)), dtype=np.int64)
        padded = np.asarray(columns.get("padded_tokens", bs * (sl + tl)), dtype=np.int64)
        return cls(
            iteration=np.asarray(columns.get("iteration", np.arange(n)), dtype=np.int64),
            epoch=np.asarray(columns.get("epoch", np.zeros(n)), dtype=np.int64),
            batch_size=bs,
            seq_len=sl,
            tgt_len=tl,
            tokens=np.asarray(columns.get("tokens", padded), dtype=np.int64),
            padded_tokens=padded,
            sum_sq_len=np.asarray(columns.get("sum_sq_len", bs * sl * sl), dtype=np.int64),
            meta=dict(meta or {}),
        )

    # ------------------------------------------------------------------ basic views
    def __len__(self) -> int:
        return int(self.iteration.shape[0])

    @property
    def n_iterations(self) -> int:
        """Number of iterations (rows)."""
        return len(self)

    @property
    def n_epochs(self) -> int:
        """Number of distinct epochs."""
        return int(np.unique(self.epoch).shape[0])

    @property
    def is_packed(self) -> bool:
        """True when rows are packed documents (``sum_sq_len`` then varies at fixed shape)."""
        return bool(self.meta.get("packed", False))

    def columns(self) -> dict[str, IntArray]:
        """Ordered mapping of column name to array."""
        return {name: getattr(self, name) for name in COLUMNS}

    def signature_columns(self) -> tuple[str, ...]:
        """Columns whose tuple fixes an iteration's cost (adds ``sum_sq_len`` when packed)."""
        return (*SIGNATURE_COLUMNS, "sum_sq_len") if self.is_packed else SIGNATURE_COLUMNS

    def signature_matrix(self) -> IntArray:
        """Signatures as an int64 array of shape ``(n_iterations, n_signature_columns)``."""
        return np.stack([getattr(self, c) for c in self.signature_columns()], axis=1)

    def unique_signatures(self) -> tuple[IntArray, IntArray, IntArray]:
        """Collapse iterations to unique signatures (a sort-free pass; see ``unique_rows``).

        Returns
        -------
        signatures : ndarray of shape (n_unique, n_signature_columns)
            Unique signature rows, sorted lexicographically.
        counts : ndarray of shape (n_unique,)
            Iterations with each signature; sums to ``n_iterations``.
        inverse : ndarray of shape (n_iterations,)
            Index into ``signatures`` of every iteration.
        """
        return unique_rows([getattr(self, c) for c in self.signature_columns()])

    def take(self, rows: Any) -> IterationSchedule:
        """Sub-schedule of the given rows (indices or boolean mask); iteration ids are kept."""
        idx = np.asarray(rows)
        cols = {name: arr[idx] for name, arr in self.columns().items()}
        rows = None if self.rows is None else self.rows.take(idx)
        return IterationSchedule(**cols, meta=dict(self.meta)).with_rows(rows)

    def with_rows(self, rows: RowLengths | None) -> IterationSchedule:
        """This schedule with ``rows`` as its per-row lengths (None drops them).

        Raises
        ------
        InputError
            ``rows`` covers another number of iterations.
        """
        if rows is not None and len(rows) != len(self):
            raise InputError(f"The schedule's per-row lengths cover {len(rows)} iterations; expected {len(self)}.")
        out = copy.copy(self)
        object.__setattr__(out, "rows", rows)
        return out

    def head(self, n: int) -> IterationSchedule:
        """The first ``n`` iterations."""
        return self.take(np.arange(min(n, len(self))))

    def epochs(self, first: int) -> IterationSchedule:
        """Iterations of the first ``first`` epochs."""
        return self.take(self.epoch < int(self.epoch.min()) + first)

    def __repr__(self) -> str:
        return (
            f"IterationSchedule(n_iterations={len(self)}, n_epochs={self.n_epochs}, "
            f"seq_len=[{int(self.seq_len.min())}..{int(self.seq_len.max())}], "
            f"meta={self.meta!r})"
        )

    def equals(self, other: IterationSchedule) -> bool:
        """Column-wise equality (meta ignored)."""
        return all(
            np.array_equal(getattr(self, c), getattr(other, c)) for c in COLUMNS
        )
