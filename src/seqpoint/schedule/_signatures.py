"""The signature table: a schedule collapsed to its unique cost signatures.

Every selector and projection works on the few hundred to few thousand unique
signatures of a run, not on its millions of iterations. The table is built by
:meth:`IterationSchedule.unique_signatures` (one fast collapse for the whole package).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from seqpoint.schedule._schedule import SIGNATURE_COLUMNS, IterationSchedule

__all__ = ["SignatureTable", "signature_table"]

IntArray = NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class SignatureTable:
    """Unique signatures of a schedule, with counts and the iteration-to-signature map.

    Attributes
    ----------
    columns : tuple of str
        Names of the signature columns (``batch_size, seq_len, tgt_len[, sum_sq_len]``).
    signatures : ndarray of shape (n_unique, n_columns)
        Unique signature rows, sorted lexicographically.
    counts : ndarray of shape (n_unique,)
        Iterations with each signature; sums to ``n_iterations``.
    inverse : ndarray of shape (n_iterations,)
        Index into ``signatures`` of every iteration.
    packed : bool
        True when ``sum_sq_len`` is part of the signature.
    """

    columns: tuple[str, ...]
    signatures: IntArray
    counts: IntArray
    inverse: IntArray
    packed: bool

    def __len__(self) -> int:
        return int(self.counts.shape[0])

    def column(self, name: str) -> IntArray:
        """One signature column, shape ``(n_unique,)``."""
        return self.signatures[:, self.columns.index(name)]

    def as_schedule(self) -> IterationSchedule:
        """One row per unique signature, as a schedule (for cost models on signatures).

        ``padded_tokens`` is ``batch_size * (seq_len + tgt_len)``; ``sum_sq_len`` comes from
        the signature when packed, else the padded ``batch_size * seq_len**2``.
        """
        cols = {name: self.column(name) for name in self.columns}
        return IterationSchedule.from_columns(cols, meta={"packed": self.packed})

    def shape_ids(self) -> IntArray:
        """Tensor shape of every signature, shape ``(n_unique,)``, ids ``0..n_shapes-1``.

        The shape is ``(batch_size, seq_len, tgt_len)``: packed signatures that differ
        only in ``sum_sq_len`` share one. Ids follow the shapes' lexicographic order.
        """
        unpacked = IterationSchedule.from_columns({c: self.column(c) for c in SIGNATURE_COLUMNS})
        return unpacked.unique_signatures()[2]

    def first_rows(self, which: IntArray) -> IntArray:
        """Row position of the first iteration having each signature in ``which``.

        Parameters
        ----------
        which : ndarray of shape (k,)
            Distinct signature indices.

        Returns
        -------
        ndarray of shape (k,)
            Row positions, aligned with ``which``.
        """
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
    """Collapse ``schedule`` to its unique signatures (``unique_signatures`` as a table).

    Parameters
    ----------
    schedule : IterationSchedule
        The run.

    Returns
    -------
    SignatureTable
        Signatures sorted lexicographically, their counts and the inverse map.
    """
    sig, counts, inverse = schedule.unique_signatures()
    return SignatureTable(
        columns=tuple(schedule.signature_columns()),
        signatures=sig,
        counts=counts,
        inverse=inverse,
        packed=schedule.is_packed,
    )
