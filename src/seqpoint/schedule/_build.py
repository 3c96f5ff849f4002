"""Vectorised construction of a schedule from batches of sample indices."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint.schedule._schedule import IntArray, IterationSchedule, round_up

__all__ = ["from_batches"]


def from_batches(
    order: NDArray[np.integer], offsets: NDArray[np.integer], batch_epoch: NDArray[np.integer],
    src_lengths: NDArray[np.integer], tgt_lengths: NDArray[np.integer] | None = None, *,
    pad_to_multiple_of: int = 1, meta: dict[str, Any] | None = None,
) -> IterationSchedule:
    """Build the schedule of batches given as a flat index order cut at ``offsets``.

    Parameters
    ----------
    order : ndarray of shape (n_assigned,)
        Sample indices in the order the run consumes them, all epochs concatenated.
    offsets : ndarray of shape (n_batches + 1,)
        Batch ``b`` is ``order[offsets[b]:offsets[b + 1]]``; strictly increasing, starting at 0.
    batch_epoch : ndarray of shape (n_batches,)
        Epoch of every batch.
    src_lengths, tgt_lengths : ndarray of shape (n_samples,)
        Source (and optional target) length of every sample, tokens or frames.
    pad_to_multiple_of : int
        Padded lengths are rounded up to a multiple of this.
    """
    order = np.asarray(order, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    starts = offsets[:-1]
    assert starts.size > 0 and np.all(np.diff(offsets) > 0), "batches must be non-empty"
    assert offsets[-1] == order.shape[0]
    src = np.asarray(src_lengths, dtype=np.int64)[order]
    batch_size = np.diff(offsets)
    seq_len = round_up(np.maximum.reduceat(src, starts), pad_to_multiple_of)
    tokens = np.add.reduceat(src, starts)
    sum_sq = np.add.reduceat(src * src, starts)
    if tgt_lengths is not None:
        tgt = np.asarray(tgt_lengths, dtype=np.int64)[order]
        tgt_len = round_up(np.maximum.reduceat(tgt, starts), pad_to_multiple_of)
        tokens = tokens + np.add.reduceat(tgt, starts)
    else:
        tgt_len = np.zeros_like(seq_len)
    cols: dict[str, IntArray] = {
        "iteration": np.arange(batch_size.shape[0], dtype=np.int64),
        "epoch": np.asarray(batch_epoch, dtype=np.int64),
        "batch_size": batch_size,
        "seq_len": seq_len,
        "tgt_len": tgt_len,
        "tokens": tokens,
        "padded_tokens": batch_size * (seq_len + tgt_len),
        "sum_sq_len": sum_sq,
    }
    return IterationSchedule(**cols, meta=dict(meta or {}))
