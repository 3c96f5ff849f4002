"""Summary statistics of a schedule: what a user checks before selecting SeqPoints."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from seqpoint.schedule._schedule import IterationSchedule

__all__ = ["ScheduleSummary", "summarize"]


@dataclass(frozen=True, kw_only=True)
class ScheduleSummary:
    """Headline numbers of a schedule."""

    n_iterations: int
    """Iterations in the run."""
    n_epochs: int
    """Distinct epochs."""
    n_unique_signatures: int
    """Distinct cost signatures ``(batch_size, seq_len, tgt_len[, sum_sq_len])``."""
    tokens: int
    """Real tokens over the run."""
    padded_tokens: int
    """Tokens computed on, padding included."""
    padding_ratio: float
    """Share of computed tokens that are padding, ``1 - tokens/padded_tokens``."""
    seq_len_min: int
    """Shortest padded seq_len."""
    seq_len_mean: float
    """Mean padded seq_len over iterations."""
    seq_len_max: int
    """Longest padded seq_len."""
    batch_size_min: int
    """Smallest batch."""
    batch_size_max: int
    """Largest batch."""
    hist_edges: list[float]
    """Edges of the seq_len histogram (``n_bins + 1`` values)."""
    hist_counts: list[int]
    """Iterations per seq_len bin."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(schedule: IterationSchedule, *, bins: int = 20) -> ScheduleSummary:
    """Summarise ``schedule`` (padding, unique signatures, seq_len histogram)."""
    sig, _, _ = schedule.unique_signatures()
    tokens = int(schedule.tokens.sum())
    padded = int(schedule.padded_tokens.sum())
    counts, edges = np.histogram(schedule.seq_len, bins=bins)
    return ScheduleSummary(
        n_iterations=len(schedule),
        n_epochs=schedule.n_epochs,
        n_unique_signatures=int(sig.shape[0]),
        tokens=tokens,
        padded_tokens=padded,
        padding_ratio=1.0 - tokens / padded if padded else 0.0,
        seq_len_min=int(schedule.seq_len.min()),
        seq_len_mean=float(schedule.seq_len.mean()),
        seq_len_max=int(schedule.seq_len.max()),
        batch_size_min=int(schedule.batch_size.min()),
        batch_size_max=int(schedule.batch_size.max()),
        hist_edges=[float(e) for e in edges],
        hist_counts=[int(c) for c in counts],
    )
