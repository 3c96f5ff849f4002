"""What a schedule collapses to: its (few thousand at most) unique signatures, and a summary
of headline numbers a user checks before selecting SeqPoints."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from seqpoint._signature import IntArray
from seqpoint.schedule._schedule import SIGNATURE_COLUMNS, IterationSchedule, unique_rows

__all__ = ["ScheduleSummary", "SignatureTable", "signature_table", "summarize"]


@dataclass(frozen=True, eq=False)
class SignatureTable:
    """Unique signatures of a schedule, with counts and the iteration-to-signature map."""

    columns: tuple[str, ...]
    """Names of the signature columns (``batch_size, seq_len, tgt_len[, sum_sq_len]``)."""
    signatures: IntArray
    """Unique signature rows, sorted lexicographically, shape ``(n_unique, n_columns)``."""
    counts: IntArray
    """Iterations with each signature, shape ``(n_unique,)``; sums to ``n_iterations``."""
    inverse: IntArray
    """Index into ``signatures`` of every iteration, shape ``(n_iterations,)``."""
    packed: bool
    """True when ``sum_sq_len`` is part of the signature."""

    def __len__(self) -> int:
        return int(self.counts.shape[0])

    def column(self, name: str) -> IntArray:
        """One signature column, shape ``(n_unique,)``."""
        return self.signatures[:, self.columns.index(name)]

    def as_schedule(self) -> IterationSchedule:
        """One row per unique signature, as a schedule (for cost models on signatures)."""
        cols = {name: self.column(name) for name in self.columns}
        return IterationSchedule.from_columns(cols, meta={"packed": self.packed})

    def shape_ids(self) -> IntArray:
        """Id (``0..n_shapes-1``, lexicographic) of every signature's tensor shape
        ``(batch_size, seq_len, tgt_len)``, shape ``(n_unique,)``."""
        return unique_rows([self.column(c) for c in SIGNATURE_COLUMNS])[2]

    def first_rows(self, which: IntArray) -> IntArray:
        """Row position of the first iteration of each distinct signature index in ``which``."""
        which = np.asarray(which, dtype=np.int64)
        lookup = np.full(len(self), -1, dtype=np.int64)
        lookup[which] = np.arange(which.shape[0], dtype=np.int64)
        hit = lookup[self.inverse]
        rows = np.flatnonzero(hit >= 0)
        # rows is increasing, so the first occurrence of each label is its first row.
        labels, first = np.unique(hit[rows], return_index=True)
        out = np.empty(which.shape[0], dtype=np.int64)
        out[labels] = rows[first]
        return out


def signature_table(schedule: IterationSchedule) -> SignatureTable:
    """Collapse ``schedule`` to its unique signatures, sorted, with counts and inverse map."""
    sig, counts, inverse = schedule.unique_signatures()
    return SignatureTable(columns=tuple(schedule.signature_columns()), signatures=sig,
                          counts=counts, inverse=inverse, packed=schedule.is_packed)


@dataclass(frozen=True, kw_only=True)
class ScheduleSummary:
    """Headline numbers of a schedule: iterations, epochs, distinct cost signatures, real and padded
    tokens over the run, the share of padding, the padded ``seq_len``'s range and mean over
    iterations, the batch size's range, and the ``seq_len`` histogram."""

    n_iterations: int
    n_epochs: int
    n_unique_signatures: int
    tokens: int
    padded_tokens: int
    padding_ratio: float
    """``1 - tokens/padded_tokens``."""
    seq_len_min: int
    seq_len_mean: float
    seq_len_max: int
    batch_size_min: int
    batch_size_max: int
    hist_edges: list[float]
    """Edges of the seq_len histogram (``n_bins + 1`` values)."""
    hist_counts: list[int]
    """Iterations per seq_len bin."""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def summarize(schedule: IterationSchedule, *, bins: int = 20) -> ScheduleSummary:
    """Summarise ``schedule`` (padding, unique signatures, seq_len histogram)."""
    sig, _, _ = schedule.unique_signatures()
    tokens, padded = int(schedule.tokens.sum()), int(schedule.padded_tokens.sum())
    counts, edges = np.histogram(schedule.seq_len, bins=bins)
    sl, bs = schedule.seq_len, schedule.batch_size
    return ScheduleSummary(
        n_iterations=len(schedule), n_epochs=schedule.n_epochs, n_unique_signatures=int(sig.shape[0]), tokens=tokens,
        padded_tokens=padded, padding_ratio=1.0 - tokens / padded if padded else 0.0, seq_len_min=int(sl.min()),
        seq_len_mean=float(sl.mean()), seq_len_max=int(sl.max()), batch_size_min=int(bs.min()),
        batch_size_max=int(bs.max()), hist_edges=[float(e) for e in edges], hist_counts=[int(c) for c in counts])
