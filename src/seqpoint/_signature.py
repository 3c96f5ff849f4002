"""The cost signature of one training iteration, declared once for every layer: a plain tuple
``(batch_size, seq_len, tgt_len)``, ``sum_sq_len`` a fourth entry on packed schedules only (a
NamedTuple's fourth ``None`` would change equality with users' tuples, hashing, and so the
cache keys on disk). Records take its fields from :class:`SignatureFields`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TypedDict

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import InputError

__all__ = ["SIGNATURE_FIELDS", "FloatArray", "IntArray", "Signature", "SignatureDict", "SignatureFields",
           "make_signature", "signature_fields"]

#: The int64 and float64 arrays every layer passes around.
IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

#: ``(batch_size, seq_len, tgt_len[, sum_sq_len])``: the shape that fixes an iteration's cost.
Signature = tuple[int, ...]
#: Names of a signature's entries, in order.
SIGNATURE_FIELDS = ("batch_size", "seq_len", "tgt_len", "sum_sq_len")


class SignatureDict(TypedDict):
    """A signature's entries by name, as record fields take them."""

    batch_size: int
    seq_len: int
    tgt_len: int
    sum_sq_len: int | None


def make_signature(batch_size: int, seq_len: int, tgt_len: int = 0, sum_sq_len: int | None = None) -> Signature:
    """The signature tuple: three entries, four when ``sum_sq_len`` is given (packed rows)."""
    base = (int(batch_size), int(seq_len), int(tgt_len))
    return base if sum_sq_len is None else (*base, int(sum_sq_len))


def signature_fields(signature: Sequence[int]) -> SignatureDict:
    """A signature's entries by name (``tgt_len`` 0 and ``sum_sq_len`` None when absent)."""
    if not 2 <= len(signature) <= 4:
        raise InputError(f"A signature is (batch_size, seq_len, tgt_len[, sum_sq_len]). Got {tuple(signature)!r}.")
    b, s, *rest = (int(v) for v in signature)
    return SignatureDict(batch_size=b, seq_len=s, tgt_len=rest[0] if rest else 0,
                         sum_sq_len=rest[1] if len(rest) > 1 else None)


@dataclass(frozen=True, kw_only=True)
class SignatureFields:
    """An iteration of a schedule and its signature, as record fields."""

    iteration: int
    """Iteration of the schedule."""
    batch_size: int
    """Sequences in the batch."""
    seq_len: int
    """Padded source length."""
    tgt_len: int = 0
    """Padded target length (0 for single-sequence models)."""
    sum_sq_len: int | None = None
    """Sum of squared document lengths (packed rows only; else None)."""

    @property
    def signature(self) -> Signature:
        """Cost signature ``(batch_size, seq_len, tgt_len[, sum_sq_len])``."""
        return make_signature(self.batch_size, self.seq_len, self.tgt_len, self.sum_sq_len)

    def to_dict(self) -> dict[str, object]:
        """The fields as JSON data, ``sum_sq_len`` only when set (as files have always had it)."""
        return {k: v for k, v in asdict(self).items() if k != "sum_sq_len" or v is not None}
