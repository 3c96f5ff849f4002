"""Length readers for CSV columns and numpy files."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import InputError
from seqpoint.traces._columns import (
    COUNT_COLUMNS,
    LENGTH_COLUMNS,
    check_scale,
    count_column_of,
    csv_header,
    csv_rows,
    data_line,
    norm_name,
    scaled_lengths,
    shown,
    warn_ignored,
)
from seqpoint.traces._files import normalize_newlines, read_bytes
from seqpoint.traces._lengths import Lengths, check_lengths

__all__ = ["read_csv_lengths", "read_numpy_lengths"]


def _csv_column_python(data: bytes, col_idx: int, source: str, col: str) -> NDArray[np.float64]:
    """Pure-Python fallback that also pinpoints the first unparsable row."""
    reader = csv.reader(io.StringIO(data.decode("utf-8", errors="replace")))
    next(reader, None)
    out: list[float] = []
    for i, row in csv_rows(reader, source):
        if not row:
            continue
        if col_idx >= len(row):
            raise InputError(f"{source} {data_line(i)}: the row has no {col!r} field ({len(row)} fields).")
        cell = row[col_idx].strip()
        try:
            out.append(float(cell) if cell else math.nan)
        except ValueError:
            raise InputError(f"{source} {data_line(i)}: {col!r} is {cell!r}, not a number; lengths "
                             "must be positive integers.") from None
    return np.asarray(out, dtype=np.float64)


def _csv_column(data: bytes, col: str, header: list[str], source: str) -> NDArray[np.float64]:
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:  # pragma: no cover - pyarrow is in the dev extra
        return _csv_column_python(data, header.index(col), source, col)
    try:
        table = pcsv.read_csv(io.BytesIO(data), convert_options=pcsv.ConvertOptions(
            include_columns=[col], column_types={col: pa.float64()}))
    except pa.ArrowInvalid:
        # pyarrow does not say which row failed; the slow parser does.
        return _csv_column_python(data, header.index(col), source, col)
    return table.column(col).to_numpy(zero_copy_only=False)


def read_csv_lengths(path: str | Path, *, column: str | None = None, scale: float = 1.0,
                     sample_rate: float | None = None, frames_per_second: float = 100.0, unit: str | None = None,
                     _data: bytes | None = None, _source: str | None = None) -> Lengths:
    """One column of a CSV file (by default the first of :data:`LENGTH_COLUMNS`) as one length
    per data row, scaled and rounded up (options: :func:`~seqpoint.traces.read_lengths`)."""
    source = _source or str(path)
    data = normalize_newlines(read_bytes(path, text=True) if _data is None else _data)
    factor = check_scale(scale, sample_rate, frames_per_second)
    header = csv_header(data[:65536].decode("utf-8", errors="replace"), source)
    counts = count_column_of(header)
    if column is None:
        found = [c for c in LENGTH_COLUMNS if c in header]
        if not found:
            hint = (f" It has a count column {counts!r}: read it as a histogram with --format histogram "
                    "(and --column NAME for the length column)." if counts is not None
                    else " Name one with column= (CLI: --column NAME).")
            raise InputError(f"{source} has no length column among the usual names; its columns "
                             f"are {shown(header)}.{hint}")
        column = found[0]
    elif column not in header:
        raise InputError(f"{source} has no column {column!r}; its columns are "
                         f"{shown(header)}. Pick one with --column NAME.")
    # Silently dropping a second length or a count column gives a wrong schedule: say so.
    warn_ignored(source, [column], [c for c in header if c != column
                                    and (c in LENGTH_COLUMNS or norm_name(c) in COUNT_COLUMNS)])
    raw = _csv_column(data, column, header, source)
    if raw.shape[0] == 0:
        raise InputError(f"{source} has a header but no data rows; give a non-empty file.")
    return scaled_lengths(raw, factor, source=source, col=column, label="column",
                          unit=unit or ("frames" if sample_rate is not None else "tokens"))


def read_numpy_lengths(path: str | Path, *, unit: str = "tokens") -> Lengths:
    """Lengths saved with numpy: ``.npy`` of shape (n,) or (n, 2) (``src, tgt``), or ``.npz``
    with ``src`` (or ``lengths``) and optionally ``tgt``."""
    source = str(path)
    data = read_bytes(path)
    try:
        loaded = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise InputError(f"{source} is not a readable .npy/.npz file ({exc}).") from None
    if isinstance(loaded, np.lib.npyio.NpzFile):
        names = list(loaded.keys())
        key = "src" if "src" in names else "lengths" if "lengths" in names else None
        if key is None:
            if len(names) != 1:
                raise InputError(f"{source} holds arrays {names}; name the source lengths 'src' (and 'tgt').")
            key = names[0]
        src = loaded[key]
        tgt = loaded["tgt"] if "tgt" in names else None
    elif loaded.ndim == 2 and loaded.shape[1] == 2:
        src, tgt = loaded[:, 0], loaded[:, 1]
    else:
        src, tgt = loaded, None
    src = check_lengths(src, source=source)
    if tgt is not None:
        tgt = check_lengths(tgt, source=source, what="target length")
    return Lengths(src=src, tgt=tgt, source=source, unit=unit)
