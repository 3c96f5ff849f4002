"""Length readers of tabular files (CSV columns, histogram CSVs ``length,count`` or ``src,tgt,count``,
JSON-lines manifests, numpy files) and what they share: column names, header and row parsing,
scaling, and the one-line messages that name a file's line and column."""

from __future__ import annotations

import csv
import io
import json
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from seqpoint._params import Constraint, Interval, check_params
from seqpoint.exceptions import ConfigError, InputError, SeqPointWarning
from seqpoint.traces._files import normalize_newlines, read_bytes
from seqpoint.traces._lengths import Lengths, check_lengths

__all__ = ["count_column_of", "read_csv_lengths", "read_histogram", "read_jsonl_lengths", "read_numpy_lengths"]

#: Column names tried, in order, when a CSV reader is given no column.
LENGTH_COLUMNS: tuple[str, ...] = ("length", "len", "lengths", "num_frames", "n_frames", "frames", "num_tokens",
                                   "n_tokens", "tokens", "num_samples", "duration")

#: Column names that mark a CSV as a histogram (how many samples have that length).
COUNT_COLUMNS: tuple[str, ...] = ("count", "counts", "cnt", "n", "num", "freq", "frequency", "occurrences",
                                  "occurrence")

#: Largest number of header fields read from a CSV (a binary blob can look like one line).
_MAX_COLUMNS = 10_000


def count_column_of(header: Sequence[str]) -> str | None:
    """The first column of ``header`` named like a count (:data:`COUNT_COLUMNS`), or None."""
    return next((name for name in header if name.strip().lower() in COUNT_COLUMNS), None)


def shown(names: Sequence[str]) -> str:
    """Column names for a message: quoted, at most 10, each cut to 40 characters."""
    cut = [n if len(n) <= 40 else n[:37] + "..." for n in names[:10]]
    more = f" and {len(names) - 10} more" if len(names) > 10 else ""
    return ", ".join(map(repr, cut)) + more


def warn_ignored(source: str, used: Sequence[str], ignored: Sequence[str]) -> None:
    if ignored:
        warnings.warn(f"{source}: reading {shown(used)}; ignoring column(s) {shown(ignored)}.",
                      SeqPointWarning, stacklevel=3)


def scaled_lengths(raw: NDArray[np.float64], scale: float, *, source: str, col: str, label: str, unit: str,
                   locate: Callable[[int], str] = lambda i: f"line {i + 2}") -> Lengths:
    """Column ``col`` times ``scale``, rounded up (a partial frame counts as a frame), checked
    as lengths; a missing or non-finite value stays NaN for the check to name. ``locate(i)``
    names data row ``i`` (0-based; by default of a file with a one-line header)."""
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


def csv_rows(text: str, source: str) -> Iterator[tuple[int, list[str]]]:
    """``enumerate(csv.reader(text))`` (the header is row 0), a CSV syntax error an InputError
    naming the line."""
    reader = csv.reader(io.StringIO(text))
    try:
        yield from enumerate(reader)
    except csv.Error as exc:
        raise InputError(f"{source} line {reader.line_num}: not valid CSV ({exc}).") from None


def _csv_column_python(data: bytes, col_idx: int, source: str, col: str) -> NDArray[np.float64]:
    """Pure-Python fallback that also pinpoints the first unparsable row."""
    out: list[float] = []
    for i, row in csv_rows(data.decode("utf-8", errors="replace"), source):
        if i == 0 or not row:
            continue
        if col_idx >= len(row):
            raise InputError(f"{source} line {i + 1}: the row has no {col!r} field ({len(row)} fields).")
        cell = row[col_idx].strip()
        try:
            out.append(float(cell) if cell else math.nan)
        except ValueError:
            raise InputError(f"{source} line {i + 1}: {col!r} is {cell!r}, not a number; lengths "
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
                                    and (c in LENGTH_COLUMNS or c.strip().lower() in COUNT_COLUMNS)])
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
        key = "src" if "src" in names else "lengths" if "lengths" in names else names[0] if len(names) == 1 else None
        if key is None:
            raise InputError(f"{source} holds arrays {names}; name the source lengths 'src' (and 'tgt').")
        src = loaded[key]
        tgt = loaded["tgt"] if "tgt" in names else None
    elif loaded.ndim == 2 and loaded.shape[1] == 2:
        src, tgt = loaded[:, 0], loaded[:, 1]
    else:
        src, tgt = loaded, None
    src = check_lengths(src, source=source)
    tgt = None if tgt is None else check_lengths(tgt, source=source, what="target length")
    return Lengths(src=src, tgt=tgt, source=source, unit=unit)


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
    if 1 <= len(rest) <= 2:
        return rest[0], rest[1] if len(rest) == 2 else None, count
    known = [n for n in rest if n in LENGTH_COLUMNS]
    if known:
        return known[0], None, count
    raise InputError(f"{source}: cannot tell which of {shown(rest)} holds the lengths; "
                     "name it with --column NAME.")


def read_histogram(path: str | Path, *, column: str | None = None, count_column: str | None = None,
                   unit: str = "tokens") -> Lengths:
    """Expand a length histogram CSV (``length,count`` or ``src,tgt,count``; the count column named like
    :data:`COUNT_COLUMNS`) into per-sample lengths, grouped by row in file order. Other columns are ignored with
    a warning; more than :data:`MAX_HISTOGRAM_SAMPLES` samples are refused before expanding."""
    source = str(path)
    text = normalize_newlines(read_bytes(path, text=True)).decode("utf-8")
    header = [h.strip() for h in csv_header(text, source)]
    src_col, tgt_col, count_col = _histogram_columns(header, source, column, count_column)
    used = [src_col] + ([tgt_col] if tgt_col else []) + [count_col]
    warn_ignored(source, used, [h for h in header if h not in used])
    idx = [header.index(c) for c in used]
    rows: list[list[float]] = []
    line_of: list[int] = []
    for i, row in csv_rows(text, source):
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


def _one_document(text: str) -> bool:
    """True when ``text`` parses as a single JSON value (pretty-printed JSON, not JSON lines)."""
    try:
        json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return False
    return True


def _jsonl_python(text: str, key: str, source: str) -> NDArray[np.float64]:
    out: list[float] = []
    for i, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            if not out and _one_document(text):
                raise InputError(f"{source} is one JSON document, not JSON lines: a manifest holds one "
                                 'JSON object per line (e.g. {"duration": 3.2}); write each record on a line '
                                 "of its own.") from None
            raise InputError(f"{source} line {i + 1}: not valid JSON ({exc.msg}).") from None
        except RecursionError:
            raise InputError(f"{source} line {i + 1}: JSON nested too deeply for a manifest.") from None
        if not isinstance(obj, dict) or key not in obj:
            keys = shown(list(obj)) if isinstance(obj, dict) else type(obj).__name__
            raise InputError(f"{source} line {i + 1}: no {key!r} field (found {keys}); choose the "
                             "field with key= (CLI: --column NAME).")
        val = obj[key]
        if val is None:
            out.append(math.nan)
        elif isinstance(val, (int, float)) and not isinstance(val, bool):
            out.append(float(val))
        else:
            raise InputError(f"{source} line {i + 1}: {key!r} is {val!r}, not a number.")
    return np.asarray(out, dtype=np.float64)


#: Manifest objects are flat; deeper nesting goes to the Python parser, which fails cleanly.
_MAX_JSON_DEPTH = 64


def _max_nesting(data: bytes) -> int:
    """Upper bound of the bracket nesting of ``data`` (brackets inside strings count too)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    step = np.isin(buf, (0x5B, 0x7B)).astype(np.int8) - np.isin(buf, (0x5D, 0x7D)).astype(np.int8)
    return int(np.cumsum(step, dtype=np.int64).max()) if step.any() else 0


def _jsonl_column(data: bytes, text: str, key: str, source: str) -> NDArray[np.float64]:
    try:
        import pyarrow as pa
        import pyarrow.json as pjson
    except ImportError:  # pragma: no cover - pyarrow is in the dev extra
        return _jsonl_python(text, key, source)
    if _max_nesting(data) > _MAX_JSON_DEPTH:
        # pyarrow's JSON parser overflows its stack (a segfault) on deep nesting.
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


def read_jsonl_lengths(path: str | Path, *, key: str = "duration", frames_per_second: float | None = 100.0,
                       unit: str | None = None) -> Lengths:
    """Field ``key`` of every non-blank line of a JSON-lines manifest (NeMo/ESPnet style) as
    lengths, seconds turned into frames (options: :func:`~seqpoint.traces.read_lengths`)."""
    source = str(path)
    data = normalize_newlines(read_bytes(path, text=True))
    text = data.decode("utf-8")
    if not text.strip():
        raise InputError(f"{source} holds no samples; give a non-empty manifest.")
    raw = _jsonl_column(data, text, key, source)
    factor = 1.0 if frames_per_second is None else check_scale(frames_per_second, None, 1.0)

    def locate(i: int) -> str:
        # Blank lines are skipped, so a position counts non-blank lines only.
        nonblank = [j for j, line in enumerate(text.split("\n")) if line.strip()]
        return f"line {nonblank[i] + 1}"

    return scaled_lengths(raw, factor, source=source, col=key, label="field", locate=locate,
                          unit=unit or ("frames" if frames_per_second is not None else "tokens"))
