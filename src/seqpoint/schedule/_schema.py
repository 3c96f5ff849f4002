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

    def fail(rows: NDArray[np.bool_], what: str) -> None:
        i = int(np.flatnonzero(rows)[0])
        raise InputError(f"{source}: {row_label(i)} (iteration {int(cols['iteration'][i])}): {what}; {_FIX}.")

    for name, (low, high) in _BOUNDS.items():
        bad = (cols[name] < low) | (cols[name] > high)
        if bad.any():
            fail(bad, f"{name} must be in [{low}, {high}] (got {int(cols[name][bad][0])})")
    it, ep = cols["iteration"], cols["epoch"]
    rank = cols.get(RANK_COLUMN)
    if rank is not None and (problem := rank_layout_error(it, rank)) is not None:
        raise InputError(f"{source}: {problem}; {_FIX} --world-size N.")
    step = np.diff(it) <= 0
    if rank is None and step.any():
        i = int(np.flatnonzero(step)[0])
        fail(np.concatenate([[False], step]), "iterations must be strictly increasing and unique "
             f"(iteration {int(it[i])} on {row_label(i)} comes before it)")
    back = np.diff(ep) < 0
    if back.any():
        i = int(np.flatnonzero(back)[0])
        fail(np.concatenate([[False], back]), f"epochs must not decrease (epoch {int(ep[i + 1])} after "
             f"epoch {int(ep[i])} on {row_label(i)})")
    # Bounded above, so the product fits in uint64 without wrapping.
    width = cols["seq_len"].astype(np.uint64) + cols["tgt_len"].astype(np.uint64)
    expected = cols["batch_size"].astype(np.uint64) * width
    wrong = expected != cols["padded_tokens"].astype(np.uint64)
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        fail(wrong, f"padded_tokens must be batch_size*(seq_len+tgt_len) = {int(expected[i])} "
                    f"(got {int(cols['padded_tokens'][i])})")
    over = cols["tokens"] > cols["padded_tokens"]
    if over.any():
        fail(over, "tokens must not exceed padded_tokens")
