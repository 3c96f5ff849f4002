"""Sequence packing: documents concatenated into fixed-length rows (``packing``)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from seqpoint._params import Boolean, Constraint
from seqpoint._signature import IntArray
from seqpoint.batching._base import POLICIES, BatchingPolicy, BatchPlan, epoch_rng
from seqpoint.batching._limits import BATCH_SIZE, LENGTH
from seqpoint.exceptions import AdjustedInputWarning
from seqpoint.schedule import IterationSchedule, RowLengths, round_up
from seqpoint.traces import Lengths

__all__ = ["PackedRows", "PackingPolicy", "pack_rows"]


@dataclass(frozen=True, eq=False)
class PackedRows:
    """Rows of one packed token stream (int64 arrays)."""

    fill: IntArray
    """Real tokens of every row, shape ``(n_rows,)``."""
    sum_sq: IntArray
    """Sum of squared document-piece lengths of every row."""
    first_row: IntArray
    """Row holding each document's first token, shape ``(n_docs,)``."""
    piece_len: IntArray
    """Length of every document piece in stream order, shape ``(n_pieces,)``."""
    piece_row: IntArray
    """Row of every document piece."""


def pack_rows(doc_lengths: IntArray, max_seq_len: int) -> PackedRows:
    """Concatenate documents (in order) and cut the stream every ``max_seq_len`` tokens,
    splitting documents at row boundaries (each piece its own sequence)."""
    L = max_seq_len
    ends = np.cumsum(doc_lengths)
    starts = ends - doc_lengths
    total = int(ends[-1])
    n_rows = -(-total // L)
    first = starts // L
    last = (ends - 1) // L
    n_pieces = last - first + 1
    piece_off = np.cumsum(n_pieces) - n_pieces
    piece_row = np.repeat(first - piece_off, n_pieces) + np.arange(int(n_pieces.sum()), dtype=np.int64)
    lo = np.maximum(np.repeat(starts, n_pieces), piece_row * L)
    piece_len = np.minimum(np.repeat(ends, n_pieces), (piece_row + 1) * L) - lo
    # Pieces are in row order and every row has at least one piece.
    row_start = np.searchsorted(piece_row, np.arange(n_rows, dtype=np.int64))
    sum_sq = np.add.reduceat(piece_len * piece_len, row_start)
    fill = np.full(n_rows, L, dtype=np.int64)
    fill[-1] = total - (n_rows - 1) * L
    return PackedRows(fill=fill, sum_sq=sum_sq.astype(np.int64), first_row=first.astype(np.int64),
                      piece_len=piece_len.astype(np.int64), piece_row=piece_row.astype(np.int64))


@POLICIES.register("packing")
@dataclass(frozen=True, kw_only=True)
class PackingPolicy(BatchingPolicy):
    """Pack shuffled documents into rows of ``max_seq_len`` tokens, ``batch_size`` rows a batch, splitting those
    that cross a row boundary (HF ``group_texts``, fairseq ``TokenBlockDataset``). Every row's ``seq_len`` is
    ``max_seq_len``; ``sum_sq_len`` (the squared piece lengths) is part of the signature (``meta["packed"]``);
    target lengths are ignored. ``schedule.rows`` holds the pieces, ``row_of`` naming each one's row."""

    name: ClassVar[str] = "packing"

    max_seq_len: int = 2048
    """Row length in tokens (the model's context)."""
    batch_size: int = 8
    """Rows per batch."""
    shuffle: bool = True
    """Shuffle documents every epoch before packing."""
    drop_last: bool = False
    """Drop the partial final row and the partial final batch of every epoch
    (HF ``group_texts`` drops the remainder row)."""
    pad_to_multiple_of: int = 1
    """Row length is rounded up to a multiple of this."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "max_seq_len": [LENGTH], "batch_size": [BATCH_SIZE], "shuffle": [Boolean()], "drop_last": [Boolean()],
        "pad_to_multiple_of": [LENGTH]}

    def _epoch_rows(self, lens: Lengths, seed: int, e: int) -> tuple[IntArray, PackedRows]:
        n = lens.n_samples
        order = epoch_rng(seed, e).permutation(n).astype(np.int64) if self.shuffle else np.arange(n)
        return order, pack_rows(lens.src[order], self.max_seq_len)

    def _kept_rows(self, rows: PackedRows) -> int:
        if not self.drop_last:
            return int(rows.fill.shape[0])
        full_rows = rows.fill.shape[0] - int(rows.fill[-1] < self.max_seq_len)
        return full_rows - full_rows % self.batch_size

    def plan(self, lengths: Lengths, *, epochs: int = 1, seed: int = 0) -> BatchPlan:
        """Documents by the batch that holds their first token (split documents appear once)."""

        def cut(e: int) -> tuple[IntArray, IntArray, int]:
            order, rows = self._epoch_rows(lengths, seed, e)
            keep = rows.first_row < self._kept_rows(rows)
            sizes = np.bincount(rows.first_row[keep] // self.batch_size)
            return order[keep], sizes[sizes > 0].astype(np.int64), int((~keep).sum())

        return BatchPlan.per_epoch(epochs, cut)

    def _replay_single(self, lens: Lengths, *, epochs: int, seed: int) -> IterationSchedule:
        """Replay packing; one schedule row per batch of packed rows (see the class notes)."""
        if lens.tgt is not None:
            warnings.warn(f"Packing ignores the target lengths of {lens.source}; rows hold source "
                          "tokens only.", AdjustedInputWarning, stacklevel=3)
        cols: dict[str, list[IntArray]] = {
            k: [] for k in ("epoch", "batch_size", "tokens", "sum_sq_len", "pieces", "piece_len", "row_of")}
        dropped, dropped_tokens = [], 0
        for e in range(int(epochs)):
            _order, rows = self._epoch_rows(lens, int(seed), e)
            kept = self._kept_rows(rows)
            dropped.append(int((rows.first_row >= kept).sum()))
            dropped_tokens += int(rows.fill[kept:].sum())
            if kept == 0:
                continue
            starts = np.arange(0, kept, self.batch_size)
            cols["batch_size"].append(np.diff(np.append(starts, kept)))
            cols["tokens"].append(np.add.reduceat(rows.fill[:kept], starts))
            cols["sum_sq_len"].append(np.add.reduceat(rows.sum_sq[:kept], starts))
            cols["epoch"].append(np.full(starts.shape[0], e, dtype=np.int64))
            keep = rows.piece_row < kept  # pieces are in row order: a prefix
            cols["piece_len"].append(rows.piece_len[keep])
            cols["row_of"].append(rows.piece_row[keep] % self.batch_size)
            cols["pieces"].append(np.bincount(rows.piece_row[keep] // self.batch_size, minlength=starts.shape[0]))
        empty = BatchPlan.concat([], dropped)
        if not cols["batch_size"]:
            self._check_nonempty(empty, lens)
        cat = {k: np.concatenate(v).astype(np.int64, copy=False) for k, v in cols.items()}
        seq = round_up(np.full(cat["batch_size"].shape[0], self.max_seq_len, dtype=np.int64), self.pad_to_multiple_of)
        meta = {**empty.meta(lens, policy=self.name, params=self.to_dict(), epochs=epochs, seed=seed),
                "packed": True, "dropped_tokens": dropped_tokens}
        per_row = RowLengths(np.concatenate([[0], np.cumsum(cat.pop("pieces"))]).astype(np.int64),
                             cat.pop("piece_len"), row_of=cat.pop("row_of"))
        return IterationSchedule.from_columns({**cat, "seq_len": seq}, meta).with_rows(per_row)
