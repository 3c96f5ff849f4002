"""Schedule files: CSV (the command-line contract's header, ``rank`` appended when data-parallel) and Parquet."""

from __future__ import annotations

import functools
import io
import json
import re
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from seqpoint._jsonio import parse_json, read_json, read_text, write_text
from seqpoint.exceptions import AdjustedInputWarning, InputError
from seqpoint.schedule._rows import read_rows, rows_path, write_rows
from seqpoint.schedule._schedule import COLUMNS, RANK_COLUMN, IterationSchedule

__all__ = ["meta_path", "read_schedule", "write_schedule"]

_HEADER = ",".join(COLUMNS)
_INTEGERS = "every schedule value must be an integer."
# What a schedule row may hold: numpy's C parser only ever sees these characters.
_NOT_INTEGER_TEXT = re.compile(r"[^0-9,+\- \t\n]")


def meta_path(path: Path) -> Path:
    """The ``<file>.meta.json`` sidecar of a schedule or trace file."""
    return path.with_name(path.name + ".meta.json")


def write_schedule(schedule: IterationSchedule, path: str | Path) -> Path:
    """Write ``schedule`` to ``.csv`` (plus a ``.meta.json`` sidecar) or ``.parquet``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        meta = {"seqpoint": json.dumps(schedule.meta, default=str)}
        pq.write_table(pa.table(schedule.file_columns()).replace_schema_metadata(meta), path)
        write_rows(schedule.rows, path)
        return path
    if suffix != ".csv":
        raise InputError(f"Cannot write a schedule to {path}: use a .csv or .parquet file name.")
    cols = schedule.file_columns()
    try:
        _write_csv(np.stack(list(cols.values()), axis=1), path, list(cols))
    except OSError as exc:
        # A failed write or close (a full disk) carries no file name; the CLI names it.
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise
    if schedule.meta:
        write_text(json.dumps(schedule.meta, indent=2, default=str), meta_path(path))
    write_rows(schedule.rows, path)
    return path


def _write_csv(data: np.ndarray, path: Path, names: list[str]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write(",".join(names) + "\n")
        # One formatted block is ~10x faster than np.savetxt's per-row formatting.
        fmt = ",".join(["%d"] * len(names)) + "\n"
        for lo in range(0, data.shape[0], 200_000):
            block = data[lo : lo + 200_000]
            fh.write((fmt * block.shape[0]) % tuple(block.ravel()))


def read_schedule(path: str | Path) -> IterationSchedule:
    """Read and check a schedule written by :func:`write_schedule` (or any CSV with the contract
    header and integer rows); a missing, non-UTF-8 or bad file is one InputError line naming the
    file, the line or row, and the fix."""
    from seqpoint.schedule._schema import check_columns, check_meta

    path = Path(path)
    if path.is_dir():
        raise InputError(f"Schedule file {path} is a folder; give the .csv or .parquet file.")
    if not path.is_file():
        raise InputError(f"Schedule file {path} does not exist; create it with 'seqpoint schedule'.")
    if path.suffix.lower() == ".parquet":
        cols, meta = _read_parquet(path)
        row_label: Callable[[int], str] = "row {}".format
        check_columns(cols, source=str(path), row_label=row_label)
        source = f"{path}: metadata 'seqpoint'"
    else:
        cols, row_label = _read_csv(path)
        check_columns(cols, source=str(path), row_label=row_label)
        meta_file = meta_path(path)
        source = str(meta_file)
        meta = read_json(meta_file, what="Schedule sidecar", made_by="seqpoint schedule") if meta_file.is_file() else {}
    rank = cols.pop(RANK_COLUMN, None)
    rows = read_rows(path, len(cols["iteration"]))  # per-row lengths, when a sidecar has them
    bad = None if rows is None else rows.mismatch(cols["batch_size"], cols["seq_len"], cols.get("tgt_len"))
    if bad is not None:
        # The schedule was edited after the sidecar was written: its lengths would feed steps wrongly.
        raise InputError(f"{rows_path(path)} does not fit {path}: for {row_label(bad[0])} it holds {bad[1]}. "
                         "Delete the sidecar (the schedule still reads) or write both again with 'seqpoint schedule'.")
    return IterationSchedule(**cols, meta=check_meta(meta, source=source), rank=rank).with_rows(rows)


def _read_parquet(path: Path) -> tuple[dict[str, np.ndarray], object]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"Cannot read Parquet schedule {path}: {_one_line(exc)}") from None
    missing = [c for c in COLUMNS if c not in table.column_names]
    if missing:
        raise InputError(f"Schedule {path} lacks column(s) {', '.join(missing)}.")
    if table.num_rows == 0:
        raise InputError(f"{path} has no rows; the schedule is empty.")
    cols = {}
    for c in [*COLUMNS, RANK_COLUMN] if RANK_COLUMN in table.column_names else COLUMNS:
        column = table.column(c)
        if not pa.types.is_integer(column.type):
            raise InputError(f"{path}: column {c!r} has type {column.type}; every schedule column must be an "
                             "integer. Write the schedule again with 'seqpoint schedule'.")
        if column.null_count:
            raise InputError(f"{path}: column {c!r} has {column.null_count} empty value(s); every row needs a value.")
        arr = column.to_numpy()
        if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise InputError(f"{path}: column {c!r} holds values beyond int64.")
        cols[c] = arr.astype(np.int64)
    try:
        text = (table.schema.metadata or {}).get(b"seqpoint", b"{}").decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: metadata 'seqpoint' is not UTF-8 text; write the schedule again.") from None
    return cols, parse_json(text, source=f"{path}: metadata 'seqpoint'")


def _read_csv(path: Path) -> tuple[dict[str, np.ndarray], Callable[[int], str]]:
    """The columns, and ``line_of(row)``: "line N" of the file for a 0-based data row."""
    text = read_text(path, what="Schedule file", made_by="seqpoint schedule").removeprefix("\ufeff")  # Excel's BOM
    if text.lstrip()[:1] in ("{", "["):
        raise InputError(f"{path} is JSON, not a schedule CSV: give the schedule (.csv or .parquet) here, not a "
                         "SeqPoints, measurements or trace file.")
    header, _, body = text.partition("\n")
    names = [h.strip() for h in header.split(",")]
    _check_header(header, names, path)
    if not body.strip():
        # np.loadtxt would warn on stderr before returning nothing: say it in one line.
        raise InputError(f"{path} has a header but no rows; the schedule is empty.")
    _check_characters(body, path, names)
    data = _parse(body, path, names)
    wanted = [*COLUMNS, RANK_COLUMN] if RANK_COLUMN in names else list(COLUMNS)
    return {c: data[:, names.index(c)] for c in wanted}, functools.partial(_file_line, body)


def _parse(body: str, path: Path, names: list[str]) -> np.ndarray:
    """The rows of ``body`` as a 2-D int64 array; a bad row is one InputError naming its line."""
    try:
        data = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.int64, ndmin=2)
    except (ValueError, OverflowError) as exc:
        raise InputError(f"{path}: {_numpy_error(exc, body, names)}") from None
    if data.shape[1] != len(names):
        raise InputError(f"{path}: rows have {data.shape[1]} values but the header names {len(names)} columns.")
    return data


def _check_header(header: str, names: list[str], path: Path) -> None:
    """The contract's columns, each once; other columns are read past with a warning."""
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        why = ("the file is empty" if not header.strip() else
               "its names are quoted; remove the quotes" if '"' in header else
               "it is not comma-separated" if "," not in header and ("\t" in header or ";" in header) else
               f"a schedule CSV starts with the header {_HEADER}")
        raise InputError(f"{path}: line 1 lacks column(s) {', '.join(missing)}; {why}.")
    if "" in names:
        raise InputError(f"{path}: line 1 has an empty column name (column {names.index('') + 1}: a trailing "
                         "or doubled comma?); remove it.")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"{path}: line 1 names column(s) {', '.join(map(repr, twice))} more than once; keep one.")
    unknown = [n for n in names if n not in COLUMNS and n != RANK_COLUMN]
    if unknown:
        warnings.warn(f"{path}: ignoring column(s) {', '.join(map(repr, unknown))} of line 1: a schedule's "
                      f"columns are {_HEADER}[,{RANK_COLUMN}].", AdjustedInputWarning, stacklevel=4)


def _check_characters(body: str, path: Path, names: list[str]) -> None:
    """Refuse any character an integer row cannot hold, naming its line and column (numpy's
    parser once segfaulted on a fuzzed CSV: it sees only digits, signs, commas and blanks)."""
    bad = _NOT_INTEGER_TEXT.search(body)
    if bad is None:
        return
    start = body.rfind("\n", 0, bad.start()) + 1
    if body[:start].strip():
        _parse(body[:start], path, names)  # a malformed row before this line is the first error
    text = body[start:].partition("\n")[0]
    field = body.count(",", start, bad.start())
    column = f"column {names[field]!r}" if field < len(names) else f"value {field + 1}"
    line = body.count("\n", 0, start) + 2  # the header is line 1
    value = text.split(",")[field].strip()
    fix = ("comments are not allowed; delete the line." if text.lstrip().startswith("#") else
           "remove the quotes." if bad.group() == '"' else _INTEGERS)
    raise InputError(f"{path}: line {line}, {column} holds {value[:40]!r} (the character {bad.group()!r}); {fix}")


def _numpy_error(exc: BaseException, body: str, names: list[str]) -> str:
    """numpy's message with its row (counted without blank lines) as the file's line and its column by name."""
    text = _one_line(exc).rstrip(".")
    convert = re.search(r" at row (\d+), column (\d+)$", text)
    width = re.search(r"the number of columns changed from (\d+) to (\d+) at row (\d+)", text)
    if convert is not None:
        row, col = int(convert.group(1)), int(convert.group(2))
        column = f"column {names[col - 1]!r}" if 0 < col <= len(names) else f"value {col}"
        return f"{_file_line(body, row)}, {column}: {text[: convert.start()]}; {_INTEGERS}"
    if width is not None:
        first, now, row = int(width.group(1)), int(width.group(2)), int(width.group(3)) - 1
        if first != len(names):  # numpy counts from the first row: that one is off
            return (f"{_file_line(body, 0)} has {first} values but the header names {len(names)} columns; "
                    "every row needs one value per header column.")
        line, index = _file_line(body, row), _body_line(body, row)
        if now == 1 and index is not None and not body.split("\n")[index].strip():
            return f"{line} holds only blanks; delete it."
        return (f"{line} has {now} value{'s' if now != 1 else ''}, the header and the rows before it "
                f"{first}; every row needs one value per header column.")
    return f"{text}; {_INTEGERS}"


def _body_line(body: str, row: int) -> int | None:
    """Index in ``body``'s lines of a 0-based data row, skipping empty lines as numpy does."""
    rows = (i for i, line in enumerate(body.split("\n")) if line)
    return next((i for k, i in enumerate(rows) if k == row), None)


def _file_line(body: str, row: int) -> str:
    """'line N' of the file for a 0-based data row (the header is line 1)."""
    index = _body_line(body, row)
    return f"line {index + 2}" if index is not None else f"data row {row + 1}"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]
