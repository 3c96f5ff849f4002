"""Length reader for histogram CSVs (``length,count`` or ``src,tgt,count``)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from seqpoint.exceptions import InputError
from seqpoint.traces._columns import (
    COUNT_COLUMNS,
    LENGTH_COLUMNS,
    count_column_of,
    csv_header,
    csv_rows,
    shown,
    warn_ignored,
)
from seqpoint.traces._files import normalize_newlines, read_bytes
from seqpoint.traces._lengths import Lengths, check_lengths

__all__ = ["MAX_HISTOGRAM_SAMPLES", "read_histogram"]

#: Histograms expanding to more samples than this are refused before allocating (memory guard).
MAX_HISTOGRAM_SAMPLES = 100_000_000


def _histogram_columns(header: list[str], source: str, column: str | None,
                       count_column: str | None) -> tuple[str, str | None, str]:
    """Pick ``(length, target or None, count)`` columns of a histogram header."""
    names = [h.strip() for h in header]

    def pick(name: str, flag: str) -> str:
        if name not in names:
            raise InputError(f"{source} has no column {name!r}; its columns are {shown(names)}. "
                             f"Pick one with {flag} NAME.")
        return name

    count = pick(count_column, "--count-column") if count_column else count_column_of(names)
    if count is None:
        raise InputError(f"{source}: a histogram needs a count column ({', '.join(COUNT_COLUMNS[:6])}, ...) "
                         f"besides the lengths, as in 'length,count' or 'src,tgt,count'. Got {shown(names)}; "
                         "name it with --count-column NAME.")
    count = count.strip()
    if column is not None:
        src = pick(column, "--column")
        if src == count:
            raise InputError(f"{source}: --column and the count column are both {src!r}.")
        tgt = "tgt" if src == "src" and "tgt" in names else None
        return src, tgt, count
    rest = [n for n in names if n != count]
    if len(rest) == 1:
        return rest[0], None, count
    if len(rest) == 2:
        return rest[0], rest[1], count
    known = [n for n in rest if n in LENGTH_COLUMNS]
    if known:
        return known[0], None, count
    raise InputError(f"{source}: cannot tell which of {shown(rest)} holds the lengths; "
                     "name it with --column NAME.")


def read_histogram(path: str | Path, *, column: str | None = None, count_column: str | None = None,
                   unit: str = "tokens") -> Lengths:
    """Expand a length histogram CSV (``length,count`` or ``src,tgt,count``; the count column
    named like :data:`COUNT_COLUMNS`) into per-sample lengths, grouped by row in file order.
    Other columns are ignored with a warning; more than :data:`MAX_HISTOGRAM_SAMPLES` samples
    are refused before expanding."""
    source = str(path)
    text = normalize_newlines(read_bytes(path, text=True)).decode("utf-8")
    header = [h.strip() for h in csv_header(text, source)]
    src_col, tgt_col, count_col = _histogram_columns(header, source, column, count_column)
    used = [src_col] + ([tgt_col] if tgt_col else []) + [count_col]
    warn_ignored(source, used, [h for h in header if h not in used])
    idx = [header.index(c) for c in used]
    rows: list[list[float]] = []
    line_of: list[int] = []
    for i, row in csv_rows(csv.reader(io.StringIO(text)), source):
        if i == 0 or not row or not "".join(row).strip():
            continue
        if len(row) != len(header):
            raise InputError(f"{source} line {i + 1}: {len(row)} fields, expected {len(header)} "
                             f"({','.join(header)}).")
        try:
            rows.append([float(row[j]) if row[j].strip() else math.nan for j in idx])
        except ValueError:
            raise InputError(f"{source} line {i + 1}: {shown(row)} holds a value that is not a "
                             "number.") from None
        line_of.append(i + 1)
    if not rows:
        raise InputError(f"{source} has a header but no rows; give a non-empty histogram.")
    table = np.asarray(rows, dtype=np.float64)

    def locate(i: int) -> str:
        return f"line {line_of[i]}"

    counts = check_lengths(table[:, -1], source=source, locate=locate, what="count", allow_zero=True,
                           limit=MAX_HISTOGRAM_SAMPLES)
    total = int(counts.sum())  # each count <= the cap, so the sum cannot wrap
    if total == 0:
        raise InputError(f"{source}: every count is 0, so the histogram holds no samples.")
    if total > MAX_HISTOGRAM_SAMPLES:
        raise InputError(f"{source}: the counts add up to {total:,} samples, more than the limit of "
                         f"{MAX_HISTOGRAM_SAMPLES:,}; scale the counts down (the schedule's shape distribution "
                         "stays the same).")
    src = check_lengths(table[:, 0], source=source, locate=locate, what=src_col)
    tgt = None
    if tgt_col is not None:
        tgt = np.repeat(check_lengths(table[:, 1], source=source, locate=locate, what=tgt_col), counts)
    return Lengths(src=np.repeat(src, counts), tgt=tgt, source=f"{source} (histogram)", unit=unit)
