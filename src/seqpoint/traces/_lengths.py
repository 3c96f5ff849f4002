"""The per-sample lengths of a data set: the only thing batching replay needs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from seqpoint._signature import IntArray
from seqpoint.exceptions import InputError

__all__ = ["MAX_LENGTH", "Lengths", "check_lengths", "from_array"]

#: Largest sequence length accepted (tokens or frames): below 2^31 a batch's ``padded_tokens``
#: and ``sum_sq_len`` stay well inside int64.
MAX_LENGTH = 2**31 - 1


def check_lengths(values: ArrayLike, *, source: str, locate: Callable[[int], str] = "sample {}".format,
                  what: str = "length", allow_zero: bool = False, limit: int = MAX_LENGTH) -> IntArray:
    """Parsed lengths (ints, or integral floats) as int64, each in ``[1, limit]`` (``[0, limit]``
    with ``allow_zero``); the first bad one is an InputError naming ``source``, ``locate(i)``
    (e.g. "line 12") and ``what``."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputError(f"{source}: {what}s must be a 1-D sequence. Got shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise InputError(f"{source} holds no samples; give a non-empty length source.")
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise InputError(f"{source}: {what}s must be numbers. Got values of type {arr.dtype} "
                         f"(first: {arr[0]!r}).")

    def refuse(bad: NDArray[np.bool_], message: Callable[[int], str]) -> None:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{source} {locate(i)}: {message(i)}")

    if np.issubdtype(arr.dtype, np.floating):
        refuse(~np.isfinite(arr), lambda i: f"{what} is {arr[i]} (missing or not finite); every {what} must be "
               "a positive integer.")
        refuse(arr != np.floor(arr), lambda i: f"{what} {float(arr[i]):g} is not an integer; lengths are counts "
               "(tokens or frames). Convert units with a scale (e.g. --scale or --sample-rate).")
    elif arr.dtype == np.uint64:
        # Values of 2^63 and above would wrap to negatives in int64.
        arr = np.minimum(arr, np.uint64(limit) + np.uint64(1)).astype(np.int64)
    hint = "" if allow_zero else " Check the unit (frames, not samples) or the column."
    refuse(np.abs(arr) > limit, lambda i: f"{what} {float(arr[i]):.6g} is too large; every {what} must be "
           f"<= {limit:,}.{hint}")
    out = np.ascontiguousarray(arr, dtype=np.int64)
    low = 0 if allow_zero else 1
    refuse(out < low, lambda i: f"{what} is {out[i]} ({'negative' if out[i] < 0 else 'zero'}); every {what} "
           f"must be >= {low}. Remove or fix that entry.")
    return out


@dataclass(frozen=True, eq=False)
class Lengths:
    """Per-sample sequence lengths of a data set, in one unit."""

    src: IntArray
    """Source (or only) length of every sample, shape ``(n_samples,)``, int64, >= 1."""
    tgt: IntArray | None = None
    """Target length of every sample for encoder-decoder data (>= 1); None otherwise."""
    source: str = "array"
    """Where the lengths came from (path, ``bundled:NAME``, ``"array"``) and how."""
    unit: str = "tokens"
    """``"tokens"`` or ``"frames"`` (10 ms audio frames)."""

    def __post_init__(self) -> None:
        src = check_lengths(self.src, source=self.source, what="source length")
        object.__setattr__(self, "src", src)
        if self.tgt is not None:
            tgt = check_lengths(self.tgt, source=self.source, what="target length")
            if tgt.shape != src.shape:
                raise InputError(f"{self.source}: {src.shape[0]} source lengths but {tgt.shape[0]} "
                                 "target lengths; parallel data needs one target per source.")
            object.__setattr__(self, "tgt", tgt)

    def __len__(self) -> int:
        return int(self.src.shape[0])

    @property
    def n_samples(self) -> int:
        return len(self)

    def num_tokens(self) -> IntArray:
        """Per-sample size used by token budgets: ``max(src, tgt)`` (fairseq's ``num_tokens``)."""
        return self.src if self.tgt is None else np.maximum(self.src, self.tgt)

    def take(self, indices: ArrayLike) -> Lengths:
        """Lengths of a subset of samples (indices or boolean mask)."""
        idx = np.asarray(indices)
        tgt = None if self.tgt is None else self.tgt[idx]
        return Lengths(src=self.src[idx], tgt=tgt, source=self.source, unit=self.unit)

    def describe(self) -> dict[str, object]:
        """Count, total and min/mean/max of the source (and target) lengths."""
        out: dict[str, object] = {"source": self.source, "unit": self.unit, "n_samples": len(self)}
        for name, arr in (("src", self.src), ("tgt", self.tgt)):
            if arr is not None:
                out[name] = {"total": int(arr.sum()), "min": int(arr.min()), "mean": float(arr.mean()),
                             "max": int(arr.max())}
        return out

    def __repr__(self) -> str:
        tgt = "" if self.tgt is None else f", tgt=[{int(self.tgt.min())}..{int(self.tgt.max())}]"
        return (f"Lengths(n_samples={len(self)}, src=[{int(self.src.min())}..{int(self.src.max())}]"
                f"{tgt}, unit={self.unit!r}, source={self.source!r})")


def from_array(src: ArrayLike, tgt: ArrayLike | None = None, *, source: str = "array",
               unit: str = "tokens") -> Lengths:
    """Wrap in-memory lengths (numpy arrays, lists, torch tensors) of shape ``(n_samples,)``,
    integral and >= 1, as :class:`Lengths` (``tgt``: target lengths of encoder-decoder data)."""
    return Lengths(src=_to_numpy(src), tgt=None if tgt is None else _to_numpy(tgt), source=source, unit=unit)


def _to_numpy(values: object) -> IntArray:
    if hasattr(values, "detach") and hasattr(values, "cpu"):  # a torch tensor
        return np.asarray(values.detach().cpu().numpy())
    return np.asarray(values)
