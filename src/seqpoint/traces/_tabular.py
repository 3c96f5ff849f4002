"""Length readers for tabular files: CSV columns, JSON-lines manifests, histograms, numpy."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint._params import Constraint, Interval, check_params
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.traces._files import read_bytes
from seqpoint.traces._lengths import Lengths, check_lengths

__all__ = [
    "LENGTH_COLUMNS",
    "read_csv_lengths",
    "read_histogram",
    "read_jsonl_lengths",
    "read_numpy_lengths",
]

#: Column names tried, in order, when a CSV reader is given no column.
LENGTH_COLUMNS: tuple[str, ...] = (
    "length",
    "len",
    "lengths",
    "num_frames",
    "n_frames",
    "frames",
    "num_tokens",
    "n_tokens",
    "tokens",
    "num_samples",
    "duration",
)

#: Histograms expanding to more samples than this are refused (memory guard).
MAX_HISTOGRAM_SAMPLES = 500_000_000


def _line(i: int) -> str:
    """Data row ``i`` (0-based) of a file with a one-line header."""
    return f"line {i + 2}"


def _scaled(
    values: NDArray[Any],
    scale: float,
    *,
    source: str,
    col: str,
    locate: Callable[[int], str] = _line,
) -> NDArray[Any]:
    """Multiply by ``scale`` and round up (partial frames count as a frame)."""
    if scale == 1.0:
        return values
    vals = values.astype(np.float64)
    bad = ~np.isfinite(vals)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{source} {locate(i)}: {col!r} is {vals[i]} (missing or not finite); "
            "every length must be a positive number."
        )
    # Rounding to 6 decimals first removes float noise such as 225440 * (1/160) = 1409.0000000002.
    return np.ceil(np.round(vals * scale, 6))


_SCALE_CONSTRAINTS: dict[str, list[Constraint]] = {
    "sample_rate": [Interval(float, 0, None, closed="neither", word="a number"), None],
    "scale": [Interval(float, 0, None, closed="neither", word="a finite number")],
}


def _check_scale(scale: float, sample_rate: float | None, frames_per_second: float) -> float:
    check_params("", _SCALE_CONSTRAINTS, {"sample_rate": sample_rate, "scale": scale})
    if sample_rate is not None:
        if scale != 1.0:
            raise ConfigError("Give either 'scale' or 'sample_rate', not both.")
        return float(frames_per_second) / float(sample_rate)
    return float(scale)


def _csv_header(text_head: str, source: str) -> list[str]:
    first = text_head.split("\n", 1)[0].rstrip("\r")
    if not first.strip():
        raise InputError(f"{source} is empty or starts with a blank line; a CSV needs a header row.")
    return next(csv.reader([first]))


def _csv_column_python(data: bytes, col_idx: int, source: str, col: str) -> NDArray[np.float64]:
    """Pure-Python fallback that also pinpoints the first unparsable row."""
    reader = csv.reader(io.StringIO(data.decode("utf-8", errors="replace")))
    next(reader, None)
    out: list[float] = []
    for i, row in enumerate(reader):
        if not row:
            continue
        if col_idx >= len(row):
            raise InputError(f"{source} {_line(i)}: the row has no {col!r} field ({len(row)} fields).")
        cell = row[col_idx].strip()
        try:
            out.append(float(cell) if cell else math.nan)
        except ValueError:
            raise InputError(
                f"{source} {_line(i)}: {col!r} is {cell!r}, not a number; lengths must be positive integers."
            ) from None
    return np.asarray(out, dtype=np.float64)


def _csv_column(data: bytes, col: str, header: list[str], source: str) -> NDArray[Any]:
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:  # pragma: no cover - pyarrow is in the dev extra
        return _csv_column_python(data, header.index(col), source, col)
    try:
        table = pcsv.read_csv(
            io.BytesIO(data),
            convert_options=pcsv.ConvertOptions(
                include_columns=[col], column_types={col: pa.float64()}
            ),
        )
    except pa.ArrowInvalid:
        # pyarrow does not say which row failed; the slow parser does.
        return _csv_column_python(data, header.index(col), source, col)
    return table.column(col).to_numpy(zero_copy_only=False)


def read_csv_lengths(
    path: str | Path,
    *,
    column: str | None = None,
    scale: float = 1.0,
    sample_rate: float | None = None,
    frames_per_second: float = 100.0,
    unit: str | None = None,
    _data: bytes | None = None,
    _source: str | None = None,
) -> Lengths:
    """Read one column of a CSV (or gzipped CSV) file as per-sample lengths.

    Parameters
    ----------
    path : str or Path
        CSV with a header row; gzip is detected by its magic bytes.
    column : str, optional
        Column holding the lengths. Default: the first of :data:`LENGTH_COLUMNS` present.
    scale : float
        Multiply every value by this and round up, e.g. ``1/160`` turns 16 kHz samples
        into 10 ms frames. With ``scale == 1`` values must already be integers.
    sample_rate : float, optional
        Shortcut for audio sample counts: ``scale = frames_per_second / sample_rate``.
    frames_per_second : float
        Frame rate used with ``sample_rate`` (100 = 10 ms frames).
    unit : str, optional
        Unit recorded on the result; ``"frames"`` when ``sample_rate`` is given, else ``"tokens"``.

    Returns
    -------
    Lengths
        ``src`` of shape (n_rows,), one length per data row.

    Raises
    ------
    InputError
        Missing file, broken gzip, missing column, NaN/empty, non-integer, negative or zero
        values (naming the line), or no data rows.
    """
    source = _source or str(path)
    data = read_bytes(path) if _data is None else _data
    factor = _check_scale(scale, sample_rate, frames_per_second)
    header = _csv_header(data[:65536].decode("utf-8", errors="replace"), source)
    if column is None:
        found = [c for c in LENGTH_COLUMNS if c in header]
        if not found:
            raise InputError(
                f"{source} has no length column among the usual names; its columns are "
                f"{', '.join(map(repr, header))}. Name one with column= (CLI: --column NAME)."
            )
        column = found[0]
    elif column not in header:
        raise InputError(
            f"{source} has no column {column!r}; its columns are "
            f"{', '.join(map(repr, header))}. Pick one with --column NAME."
        )
    raw = _csv_column(data, column, header, source)
    if raw.shape[0] == 0:
        raise InputError(f"{source} has a header but no data rows; give a non-empty file.")
    values = _scaled(raw, factor, source=source, col=column)
    src = check_lengths(values, source=source, locate=_line, what=repr(column))
    how = f" x{factor:g} rounded up" if factor != 1.0 else ""
    return Lengths(
        src=src,
        source=f"{source} column {column!r}{how}",
        unit=unit or ("frames" if sample_rate is not None else "tokens"),
    )


def _jsonl_python(text: str, key: str, source: str) -> NDArray[np.float64]:
    out: list[float] = []
    for i, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{source} line {i + 1}: not valid JSON ({exc.msg}).") from None
        if not isinstance(obj, dict) or key not in obj:
            keys = ", ".join(map(repr, obj)) if isinstance(obj, dict) else type(obj).__name__
            raise InputError(
                f"{source} line {i + 1}: no {key!r} field (found {keys}); choose the field with "
                "key= (CLI: --column NAME)."
            )
        val = obj[key]
        if val is None:
            out.append(math.nan)
        elif isinstance(val, (int, float)) and not isinstance(val, bool):
            out.append(float(val))
        else:
            raise InputError(f"{source} line {i + 1}: {key!r} is {val!r}, not a number.")
    return np.asarray(out, dtype=np.float64)


def _jsonl_column(data: bytes, text: str, key: str, source: str) -> NDArray[Any]:
    try:
        import pyarrow as pa
        import pyarrow.json as pjson
    except ImportError:  # pragma: no cover - pyarrow is in the dev extra
        return _jsonl_python(text, key, source)
    try:
        table = pjson.read_json(io.BytesIO(data))
        if key not in table.column_names:
            raise KeyError(key)
        col = table.column(key)
        if col.null_count or not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise TypeError(col.type)
        return col.cast(pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, KeyError, TypeError):
        # The slow parser names the offending line.
        return _jsonl_python(text, key, source)


def read_jsonl_lengths(
    path: str | Path,
    *,
    key: str = "duration",
    frames_per_second: float | None = 100.0,
    unit: str | None = None,
) -> Lengths:
    """Read a JSON-lines manifest (one object per line) as per-sample lengths.

    Parameters
    ----------
    path : str or Path
        JSON-lines file (NeMo/ESPnet-style manifest), optionally gzipped.
    key : str
        Field holding the length; ``duration`` (seconds) by default.
    frames_per_second : float or None
        Seconds are converted to frames as ``ceil(duration * frames_per_second)``
        (100 = 10 ms frames). None takes the values as they are (they must be integers).
    unit : str, optional
        Unit recorded on the result; ``"frames"`` when converting, else ``"tokens"``.

    Returns
    -------
    Lengths
        One length per non-blank line; ``src`` of shape (n_lines,).
    """
    source = str(path)
    data = read_bytes(path)
    text = data.decode("utf-8", errors="replace")
    if not text.strip():
        raise InputError(f"{source} holds no samples; give a non-empty manifest.")
    raw = _jsonl_column(data, text, key, source)
    factor = 1.0 if frames_per_second is None else _check_scale(frames_per_second, None, 1.0)

    def locate(i: int) -> str:
        # Blank lines are skipped, so a position counts non-blank lines only.
        nonblank = [j for j, line in enumerate(text.split("\n")) if line.strip()]
        return f"line {nonblank[i] + 1}"

    values = _scaled(raw, factor, source=source, col=key, locate=locate)

    src = check_lengths(values, source=source, locate=locate, what=repr(key))
    how = f" x{factor:g} rounded up" if factor != 1.0 else ""
    return Lengths(
        src=src,
        source=f"{source} field {key!r}{how}",
        unit=unit or ("frames" if frames_per_second is not None else "tokens"),
    )


def read_histogram(path: str | Path, *, unit: str = "tokens") -> Lengths:
    """Expand a length histogram CSV into per-sample lengths.

    The header is ``length,count`` (single sequences) or ``src,tgt,count``
    (encoder-decoder pairs). Samples come out grouped by row, in file order;
    every batching policy shuffles or sorts them anyway.

    Returns
    -------
    Lengths
        ``sum(count)`` samples; ``tgt`` set for the three-column form.
    """
    source = str(path)
    data = read_bytes(path)
    text = data.decode("utf-8", errors="replace")
    header = [h.strip() for h in _csv_header(text, source)]
    if header not in (["length", "count"], ["src", "tgt", "count"]):
        raise InputError(
            f"{source}: a histogram needs the header 'length,count' or 'src,tgt,count'. "
            f"Got {','.join(header)!r}."
        )
    rows: list[list[float]] = []
    for i, row in enumerate(csv.reader(io.StringIO(text))):
        if i == 0 or not row or not "".join(row).strip():
            continue
        if len(row) != len(header):
            raise InputError(
                f"{source} line {i + 1}: {len(row)} fields, expected {len(header)} ({','.join(header)})."
            )
        try:
            rows.append([float(c) if c.strip() else math.nan for c in row])
        except ValueError:
            raise InputError(f"{source} line {i + 1}: {row!r} holds a value that is not a number.") from None
    if not rows:
        raise InputError(f"{source} has a header but no rows; give a non-empty histogram.")
    table = np.asarray(rows, dtype=np.float64)
    # Map row positions back to line numbers (blank lines are skipped above).
    line_of = [
        i + 1
        for i, row in enumerate(csv.reader(io.StringIO(text)))
        if i > 0 and row and "".join(row).strip()
    ]

    def locate(i: int) -> str:
        return f"line {line_of[i]}"

    counts = check_lengths(table[:, -1], source=source, locate=locate, what="count", allow_zero=True)
    total = int(counts.sum())
    if total == 0:
        raise InputError(f"{source}: every count is 0, so the histogram holds no samples.")
    if total > MAX_HISTOGRAM_SAMPLES:
        raise InputError(
            f"{source}: the counts add up to {total} samples, more than {MAX_HISTOGRAM_SAMPLES}; "
            "scale the counts down (the schedule's shape distribution stays the same)."
        )
    src = check_lengths(table[:, 0], source=source, locate=locate, what=header[0])
    tgt = None
    if len(header) == 3:
        tgt = np.repeat(check_lengths(table[:, 1], source=source, locate=locate, what="tgt"), counts)
    return Lengths(src=np.repeat(src, counts), tgt=tgt, source=f"{source} (histogram)", unit=unit)


def read_numpy_lengths(path: str | Path, *, unit: str = "tokens") -> Lengths:
    """Read lengths saved with numpy.

    ``.npy``: shape (n,) for single sequences or (n, 2) for ``src, tgt`` pairs.
    ``.npz``: arrays named ``src`` (or ``lengths``) and optionally ``tgt``.
    """
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
                raise InputError(
                    f"{source} holds arrays {names}; name the source lengths 'src' (and 'tgt')."
                )
            key = names[0]
        src = loaded[key]
        tgt = loaded["tgt"] if "tgt" in names else None
    else:
        arr = loaded
        if arr.ndim == 2 and arr.shape[1] == 2:
            src, tgt = arr[:, 0], arr[:, 1]
        else:
            src, tgt = arr, None
    src = check_lengths(src, source=source)
    if tgt is not None:
        tgt = check_lengths(tgt, source=source, what="target length")
    return Lengths(src=src, tgt=tgt, source=source, unit=unit)
