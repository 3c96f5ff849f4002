"""The contract of a schedule file, checked once column by column (vectorised): the bounds of
:data:`_BOUNDS`, iterations strictly increasing (or the rank layout), epochs non-decreasing,
``tokens <= padded_tokens = batch_size * (seq_len + tgt_len)``; and the ``.meta.json`` sidecar by
a pydantic schema (imported only by the readers)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from seqpoint._jsonio import MAX_COUNT, MAX_LENGTH, validate
from seqpoint._signature import IntArray
from seqpoint.exceptions import InputError
from seqpoint.schedule._schedule import RANK_COLUMN, rank_layout_error

__all__ = ["ScheduleMetaSchema", "check_columns", "check_meta"]

_FIX = "write the schedule again with 'seqpoint schedule'"

#: Column → (lowest, highest) value a file may hold.
_BOUNDS: dict[str, tuple[int, int]] = {
    "iteration": (0, MAX_LENGTH), "epoch": (0, MAX_LENGTH), "batch_size": (1, MAX_LENGTH), "seq_len": (1, MAX_LENGTH),
    "tgt_len": (0, MAX_LENGTH), "tokens": (0, MAX_COUNT), "padded_tokens": (1, MAX_COUNT),
    "sum_sq_len": (0, MAX_COUNT)}


class ScheduleMetaSchema(BaseModel):
    """The ``.meta.json`` sidecar (and a Parquet file's ``seqpoint`` metadata): free-form
    provenance, except for the keys the code reads."""

    model_config = ConfigDict(strict=True, extra="allow")

    packed: bool = False
    policy: str | None = None


def check_meta(data: object, *, source: str) -> dict[str, object]:
    """Validate parsed sidecar metadata; returns it unchanged (no defaults added)."""
    validate(ScheduleMetaSchema, data, source=source, fix=f"fix or delete it, or {_FIX}")
    assert isinstance(data, dict)  # the schema refuses anything else
    return dict(data)


def check_columns(cols: Mapping[str, IntArray], *, source: str, row_label: Callable[[int], str]) -> None:
    """Check a file's int64 columns (and ``rank``); the first bad row is one InputError line
    naming the row as ``row_label`` does (``line 7`` for CSV, ``row 5`` for Parquet)."""

    def check(bad: NDArray[np.bool_], what: Callable[[int], str]) -> None:
        """Raise naming the first ``bad`` row and ``what(row)`` is wrong there."""
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"{source}: {row_label(i)} (iteration {int(cols['iteration'][i])}): {what(i)}; {_FIX}.")

    for name, (low, high) in _BOUNDS.items():
        col = cols[name]
        check((col < low) | (col > high),
              lambda i: f"{name} must be in [{low}, {high}] (got {int(col[i])})")  # noqa: B023 - called at once
    it, ep = cols["iteration"], cols["epoch"]
    rank = cols.get(RANK_COLUMN)
    if rank is not None and (problem := rank_layout_error(it, rank)) is not None:
        raise InputError(f"{source}: {problem}; {_FIX} --world-size N.")
    if rank is None:
        check(np.concatenate([[False], np.diff(it) <= 0]), lambda i: "iterations must be strictly increasing and "
              f"unique (iteration {int(it[i - 1])} on {row_label(i - 1)} comes before it)")
    check(np.concatenate([[False], np.diff(ep) < 0]), lambda i: f"epochs must not decrease (epoch {int(ep[i])} "
          f"after epoch {int(ep[i - 1])} on {row_label(i - 1)})")
    # Bounded above, so the product fits in uint64 without wrapping.
    width = cols["seq_len"].astype(np.uint64) + cols["tgt_len"].astype(np.uint64)
    expected = cols["batch_size"].astype(np.uint64) * width
    check(expected != cols["padded_tokens"].astype(np.uint64), lambda i: "padded_tokens must be "
          f"batch_size*(seq_len+tgt_len) = {int(expected[i])} (got {int(cols['padded_tokens'][i])})")
    check(cols["tokens"] > cols["padded_tokens"], lambda i: "tokens must not exceed padded_tokens")
