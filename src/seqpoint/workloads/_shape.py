"""The shape of one iteration's batch as a workload sees it: the signature plus each
sequence's real length (:class:`BatchShape`)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from seqpoint._signature import IntArray
from seqpoint.exceptions import InputError
from seqpoint.workloads._base import Signature, check_signature

__all__ = ["BatchShape", "takes_batch_shape"]

Ints = Sequence[int] | NDArray[np.integer]


@dataclass(frozen=True, eq=False)
class BatchShape:
    """One iteration's batch: its signature (``batch_size``, ``seq_len``, ``tgt_len`` (0: none), and for packed rows
    ``sum_sq_len``, else None) and the real ``lengths`` and ``tgt_lengths`` of every sequence, int64 arrays of shape
    (n_sequences,): ``batch_size`` of them for a padded batch, the documents of packed rows, which ``row_of`` (None:
    laid end to end) places in a row ``0..batch_size-1``. ``exact`` is False when every sequence is taken as full
    length, the shape the built-in workloads assume."""

    batch_size: int
    seq_len: int
    tgt_len: int
    sum_sq_len: int | None
    lengths: IntArray
    tgt_lengths: IntArray
    exact: bool
    row_of: IntArray | None = None

    @classmethod
    def of(cls, signature: BatchShape | Sequence[int], lengths: Ints | None = None, tgt_lengths: Ints | None = None,
           *, row_of: Ints | None = None, workload: str = "workload") -> BatchShape:
        """The shape of ``signature`` with the given lengths (full length when None; a BatchShape
        given alone is returned as is, so ``make_batch`` may take either). InputError for a
        negative length, one longer than its padded length, or rows over ``seq_len`` tokens."""
        if isinstance(signature, BatchShape):
            if lengths is None and tgt_lengths is None and row_of is None:
                return signature
            signature = signature.signature
        b, s, t, q = check_signature(tuple(signature), workload=workload)
        exact = lengths is not None
        src = np.full(b, s, dtype=np.int64) if lengths is None else np.array(lengths, dtype=np.int64)
        tgt = np.full(src.shape[0], t, dtype=np.int64) if tgt_lengths is None else np.array(tgt_lengths, dtype=np.int64)
        if src.ndim != 1 or src.size == 0 or tgt.shape != src.shape:
            raise InputError(f"The lengths of a {workload} batch must be one non-empty list (and tgt_lengths as "
                             f"many). Got {src.shape[0] if src.ndim == 1 else src.shape} and {tgt.shape}.")
        if src.min() < 0 or src.max() > s or tgt.min() < 0 or tgt.max() > max(t, 0):
            raise InputError(f"The lengths of a {workload} batch must lie in [0, seq_len={s}] (targets in "
                             f"[0, tgt_len={t}]). Got {src.min()}..{src.max()} and {tgt.min()}..{tgt.max()}.")
        rows = None if row_of is None else np.array(row_of, dtype=np.int64)
        if rows is not None:
            fill = np.bincount(rows, weights=src, minlength=b) if rows.size and rows.min() >= 0 else None
            if (rows.shape != src.shape or fill is None or fill.shape[0] != b
                    or np.any(np.diff(rows) < 0) or fill.max() > s):
                raise InputError(f"The row_of of a packed {workload} batch must give each of its {src.shape[0]} "
                                 f"documents a row in 0..{b - 1}, in order, with at most seq_len={s} tokens a row.")
        return cls(b, s, t, q, src, tgt, exact, rows)

    @property
    def signature(self) -> Signature:
        base = (self.batch_size, self.seq_len, self.tgt_len)
        return base if self.sum_sq_len is None else (*base, self.sum_sq_len)

    def digest(self) -> str:
        """A sha256 of the signature and every length: equal for equal shapes only."""
        h = hashlib.sha256(repr(self.signature).encode())
        h.update(self.lengths.tobytes())
        h.update(self.tgt_lengths.tobytes())
        if self.row_of is not None:  # absent for unpacked shapes: their digests are unchanged
            h.update(b"row_of")
            h.update(self.row_of.tobytes())
        return h.hexdigest()

    @property
    def packed(self) -> bool:
        """True when the lengths are documents packed into fewer rows than sequences."""
        return self.row_of is not None or self.lengths.shape[0] != self.batch_size

    def packed_rows(self) -> list[IntArray]:
        """The document lengths of each of the ``batch_size`` rows: by ``row_of``; one sequence a
        row when padded; else laid end to end (a document in the row its first token falls in)."""
        rows = self.row_of
        if rows is None and not self.packed:
            rows = np.arange(self.batch_size, dtype=np.int64)
        elif rows is None:
            starts = np.cumsum(self.lengths) - self.lengths
            rows = np.minimum(starts // max(self.seq_len, 1), self.batch_size - 1).astype(np.int64)
        cuts = np.searchsorted(rows, np.arange(1, self.batch_size))
        return list(np.split(self.lengths, cuts))

    def cu_seqlens(self) -> list[IntArray]:
        """Per row, the cumulative document lengths ``[0, l0, l0 + l1, ...]`` (int64), as
        varlen attention kernels (``flash_attn_varlen_func``) take them."""
        return [np.concatenate([[0], np.cumsum(r)]).astype(np.int64) for r in self.packed_rows()]

    def position_ids(self) -> IntArray:
        """``(batch_size, seq_len)`` positions restarting at 0 at every document of a row (as
        ``DataCollatorWithFlattening`` writes them); 0 on padding."""
        out = np.zeros((self.batch_size, self.seq_len), dtype=np.int64)
        for r, docs in enumerate(self.packed_rows()):
            if docs.size:
                n = int(docs.sum())
                out[r, :n] = np.arange(n) - np.repeat(np.cumsum(docs) - docs, docs)
        return out

    def real_mask(self, *, target: bool = False) -> NDArray[np.bool_]:
        """``(n_sequences, padded length)``: True on real positions, an ``attention_mask`` (right padding)."""
        lens, width = (self.tgt_lengths, self.tgt_len) if target else (self.lengths, self.seq_len)
        return np.arange(width)[None, :] < lens[:, None]

    def padding_mask(self, *, target: bool = False) -> NDArray[np.bool_]:
        """Deprecated name of :meth:`real_mask` (True on real positions, despite the name)."""
        import warnings

        warnings.warn("BatchShape.padding_mask() is True on real positions; call real_mask() (the same "
                      "values), or ~real_mask() for a key_padding_mask.", DeprecationWarning, stacklevel=2)
        return self.real_mask(target=target)


def takes_batch_shape(workload: object) -> bool:
    """True when ``workload.make_batch`` accepts a :class:`BatchShape` (``takes_batch_shape = True``)."""
    return getattr(workload, "takes_batch_shape", False) is True

