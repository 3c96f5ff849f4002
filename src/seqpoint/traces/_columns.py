"""What the tabular length readers share: column names, header and row parsing, scaling,
and the one-line messages that name a file's line and column."""

from __future__ import annotations

import csv
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from seqpoint._params import Constraint, Interval, check_params
from seqpoint.exceptions import ConfigError, InputError, SeqPointWarning
from seqpoint.traces._lengths import Lengths, check_lengths

__all__ = ["COUNT_COLUMNS", "LENGTH_COLUMNS", "check_scale", "count_column_of", "csv_header", "csv_rows", "data_line",
           "norm_name", "scaled_lengths", "shown", "warn_ignored"]

#: Column names tried, in order, when a CSV reader is given no column.
LENGTH_COLUMNS: tuple[str, ...] = ("length", "len", "lengths", "num_frames", "n_frames", "frames", "num_tokens",
                                   "n_tokens", "tokens", "num_samples", "duration")

#: Column names that mark a CSV as a histogram (how many samples have that length).
COUNT_COLUMNS: tuple[str, ...] = ("count", "counts", "cnt", "n", "num", "freq", "frequency", "occurrences",
                                  "occurrence")

#: Largest number of header fields read from a CSV (a binary blob can look like one line).
_MAX_COLUMNS = 10_000


def norm_name(name: str) -> str:
    return name.strip().lower()


def count_column_of(header: Sequence[str]) -> str | None:
    """The first column of ``header`` named like a count (:data:`COUNT_COLUMNS`), or None."""
    return next((name for name in header if norm_name(name) in COUNT_COLUMNS), None)


def shown(names: Sequence[str]) -> str:
    """Column names for a message: quoted, at most 10, each cut to 40 characters."""
    cut = [n if len(n) <= 40 else n[:37] + "..." for n in names[:10]]
    more = f" and {len(names) - 10} more" if len(names) > 10 else ""
    return ", ".join(map(repr, cut)) + more


def warn_ignored(source: str, used: Sequence[str], ignored: Sequence[str]) -> None:
    if ignored:
        warnings.warn(f"{source}: reading {shown(used)}; ignoring column(s) {shown(ignored)}.",
                      SeqPointWarning, stacklevel=3)


def data_line(i: int) -> str:
    """Data row ``i`` (0-based) of a file with a one-line header."""
    return f"line {i + 2}"


def scaled_lengths(raw: NDArray[np.float64], scale: float, *, source: str, col: str, label: str, unit: str,
                   locate: Callable[[int], str] = data_line) -> Lengths:
    """Column ``col`` times ``scale``, rounded up (a partial frame counts as a frame), checked
    as lengths; a missing or non-finite value stays NaN for the check to name."""
    # Rounding to 6 decimals first removes float noise such as 225440 * (1/160) = 1409.0000000002.
    values = raw if scale == 1.0 else np.ceil(np.round(raw.astype(np.float64) * scale, 6))
    src = check_lengths(values, source=source, locate=locate, what=repr(col))
    how = f" x{scale:g} rounded up" if scale != 1.0 else ""
    return Lengths(src=src, source=f"{source} {label} {col!r}{how}", unit=unit)


_SCALE_CONSTRAINTS: dict[str, list[Constraint]] = {
    "sample_rate": [Interval(float, 0, None, closed="neither", word="a number"), None],
    "scale": [Interval(float, 0, None, closed="neither", word="a finite number")]}


def check_scale(scale: float, sample_rate: float | None, frames_per_second: float) -> float:
    check_params("", _SCALE_CONSTRAINTS, {"sample_rate": sample_rate, "scale": scale})
    if sample_rate is not None:
        if scale != 1.0:
            raise ConfigError("Give either 'scale' or 'sample_rate', not both.")
        return float(frames_per_second) / float(sample_rate)
    return float(scale)


def csv_header(text_head: str, source: str) -> list[str]:
    first = text_head.split("\n", 1)[0].split("\r", 1)[0]
    if not first.strip():
        raise InputError(f"{source} is empty or starts with a blank line; a CSV needs a header row.")
    try:
        header = next(csv.reader([first]))
    except csv.Error as exc:
        raise InputError(f"{source} line 1: not a CSV header ({exc}).") from None
    if len(header) > _MAX_COLUMNS:
        raise InputError(f"{source} line 1: {len(header)} columns; a length CSV has a few.")
    return header


class CsvReader(Protocol):
    """What :func:`csv.reader` returns."""

    line_num: int

    def __next__(self) -> list[str]: ...


def csv_rows(reader: CsvReader, source: str) -> Iterator[tuple[int, list[str]]]:
    """``enumerate(reader)`` that turns a CSV syntax error into an InputError naming the line."""
    i = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(f"{source} line {reader.line_num}: not valid CSV ({exc}).") from None
        yield i, row
        i += 1
