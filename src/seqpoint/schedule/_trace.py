"""Run traces: the shapes and times of a real training run, one row per micro-batch, the ground truth of a
projection. The integrations write them (``SeqPointCallback``, ``record``); they read back as a schedule (one
row per micro-batch) plus every optimizer step's time. A file is CSV (with a ``.meta.json`` sidecar) or Parquet
with the columns :data:`TRACE_COLUMNS` (``rank`` last in a multi-process trace)."""

from __future__ import annotations

import csv
import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint._signature import FloatArray, IntArray
from seqpoint.exceptions import AdjustedInputWarning, InputError
from seqpoint.schedule._io import meta_path
from seqpoint.schedule._rows import RowLengths, read_rows, rows_path, write_rows
from seqpoint.schedule._schedule import IterationSchedule, set_columns

__all__ = ["TRACE_COLUMNS", "RunTrace", "read_trace", "write_trace"]

#: Columns of a run trace file, in order (``rank`` may follow).
TRACE_COLUMNS: tuple[str, ...] = ("iteration", "epoch", "micro_batch", "batch_size", "seq_len", "tgt_len",
                                  "tokens", "sum_sq_len", "time_s")

_FIX = "a run trace is written by seqpoint.integrations (SeqPointCallback or record)"


@dataclass(frozen=True, eq=False)
class RunTrace:
    """Shapes and times of a recorded training run, one row per micro-batch: int64 columns of
    shape ``(n_rows,)``, ``time_s`` float64; the shape columns as in :class:`IterationSchedule`."""

    iteration: IntArray
    """Optimizer step the micro-batch belongs to, 0-based, non-decreasing per rank."""
    epoch: IntArray
    """Epoch of the micro-batch, 0-based."""
    micro_batch: IntArray
    """Index of the micro-batch within its optimizer step (0 without accumulation)."""
    batch_size: IntArray
    seq_len: IntArray
    tgt_len: IntArray
    tokens: IntArray
    sum_sq_len: IntArray
    time_s: FloatArray
    """Seconds of the micro-batch; the rows of a step sum to the step's time."""
    rank: IntArray | None = None
    """Data-parallel rank of each row; None for a single-process trace."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Provenance (recorder, device, model); ``packed`` marks padding-free packing."""
    rows: RowLengths | None = field(default=None, repr=False)
    """Each micro-batch's real sequence lengths, when the recorder could read them (an attention
    mask or packed ``position_ids``); saved as ``<file>.rows.npz``."""

    def __post_init__(self) -> None:
        n = set_columns(self, (*TRACE_COLUMNS, "rank"), what="Trace", dtypes={"time_s": np.float64})
        if not n:
            raise InputError(f"The run trace is empty: no micro-batch was recorded; {_FIX}.")
        if self.rows is not None and len(self.rows) != n:
            raise InputError(f"The trace's per-row lengths cover {len(self.rows)} micro-batches; expected {n}.")
        for name, low in (("batch_size", 1), ("seq_len", 1), ("iteration", 0), ("epoch", 0),
                          ("micro_batch", 0), ("tgt_len", 0), ("tokens", 0), ("sum_sq_len", 0)):
            bad = np.flatnonzero(getattr(self, name) < low)
            if bad.size:
                raise InputError(f"Trace row {int(bad[0])} has {name} {int(getattr(self, name)[bad[0]])}; "
                                 f"it must be >= {low}.")
        bad = np.flatnonzero(~np.isfinite(self.time_s) | (self.time_s < 0))
        if bad.size:
            raise InputError(f"Trace row {int(bad[0])} has time_s {float(self.time_s[bad[0]])}; "
                             "times must be finite and >= 0.")

    @classmethod
    def from_rows(cls, rows: Sequence[Mapping[str, float]], meta: dict[str, Any] | None = None,
                  lengths: RowLengths | None = None) -> RunTrace:
        """Build from a list of row mappings (a ``rank`` key in the first row adds the column)
        and, optionally, every row's sequence lengths."""
        cols: dict[str, Any] = {c: [r[c] for r in rows] for c in TRACE_COLUMNS}  # no rows: __post_init__ says so
        rank = np.asarray([r["rank"] for r in rows], dtype=np.int64) if rows and "rank" in rows[0] else None
        return cls(**cols, rank=rank, meta=dict(meta or {}), rows=lengths)

    def __len__(self) -> int:
        return int(self.iteration.shape[0])

    @property
    def ranks(self) -> list[int]:
        """Distinct ranks of the trace (``[0]`` for a single-process trace)."""
        return [0] if self.rank is None else sorted({int(r) for r in self.rank})

    def columns(self) -> dict[str, NDArray[Any]]:
        """Ordered mapping of column name to array (``rank`` last when present)."""
        return {c: getattr(self, c) for c in (*TRACE_COLUMNS, "rank") if getattr(self, c) is not None}

    def for_rank(self, rank: int) -> RunTrace:
        """The rows of one data-parallel rank (the trace itself when it has no rank column)."""
        if self.rank is None:
            return self
        rows = self.rank == rank
        if not rows.any():
            raise InputError(f"The trace has no row of rank {rank}; its ranks are {self.ranks}.")
        cols = {c: arr[rows] for c, arr in self.columns().items()}
        kept = None if self.rows is None else self.rows.take(rows)
        return RunTrace(**cols, meta=dict(self.meta), rows=kept)

    def to_schedule(self, rank: int | None = None) -> IterationSchedule:
        """The micro-batches of ``rank`` (required when the trace holds several) as a schedule:
        one row per micro-batch, in trace order, iteration ids ``0..n-1``; the meta keeps every
        row's optimizer step (``optimizer_step``) and ``micro_batch``."""
        if rank is None and len(self.ranks) > 1:
            raise InputError(f"The trace holds ranks {self.ranks}; pick one with rank=R "
                             "(each rank runs its own schedule).")
        t = self.for_rank(self.ranks[0] if rank is None else rank)
        meta = {**t.meta, "source": "trace", "optimizer_step": t.iteration.tolist(),
                "micro_batch": t.micro_batch.tolist()}
        if t.rows is not None:
            meta["packed"] = t.rows.flattened(t.batch_size)
        cols = {c: getattr(t, c) for c in ("epoch", "batch_size", "seq_len", "tgt_len", "tokens", "sum_sq_len")}
        return IterationSchedule.from_columns(cols, meta).with_rows(t.rows)  # iterations 0..n-1, padded_tokens

    def step_times_s(self) -> FloatArray:
        """Seconds of every optimizer step (the sum of its micro-batches; with several ranks,
        the slowest rank's)."""
        steps, inverse = np.unique(self.iteration, return_inverse=True)
        inverse = inverse.reshape(-1)
        rank = np.zeros(len(self), dtype=np.int64) if self.rank is None else self.rank
        out: FloatArray = np.max([np.bincount(inverse[rank == r], weights=self.time_s[rank == r], minlength=steps.size)
                                  for r in self.ranks], axis=0)
        return out

    @property
    def total_time_s(self) -> float:
        """Seconds of the whole recorded run (sum of step times)."""
        return float(self.step_times_s().sum())

    def __repr__(self) -> str:
        return (f"RunTrace(n_rows={len(self)}, n_steps={np.unique(self.iteration).size}, "
                f"ranks={self.ranks}, total_time_s={self.total_time_s:.4g})")


def write_trace(trace: RunTrace, path: str | Path) -> Path:
    """Write ``trace`` to ``.csv`` (plus a ``.meta.json`` sidecar) or ``.parquet``."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise InputError(f"Cannot write a run trace to {path}: use a .csv or .parquet file name.")
    path.parent.mkdir(parents=True, exist_ok=True)
    cols = trace.columns()
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        meta = {"seqpoint": json.dumps(trace.meta, default=str)}
        pq.write_table(pa.table(cols).replace_schema_metadata(meta), path)
    else:
        with path.open("w", newline="") as fh:
            fh.write(",".join(cols) + "\n")
            for i in range(len(trace)):
                # repr-exact floats keep a written trace equal to the one read back.
                fh.write(",".join(repr(float(cols[c][i])) if c == "time_s" else str(int(cols[c][i])) for c in cols)
                         + "\n")
        meta_path(path).write_text(json.dumps(trace.meta, indent=2, default=str))
    write_rows(trace.rows, path)
    return path


def _check_header(path: Path, names: list[str], where: str) -> None:
    missing = [c for c in TRACE_COLUMNS if c not in names]
    if missing:
        raise InputError(f"{path}: {where} lacks column(s) {', '.join(missing)}; a run trace has the columns "
                         f"{','.join(TRACE_COLUMNS)}[,rank] ({_FIX}).")


def read_trace(path: str | Path) -> RunTrace:
    """Read a run trace written by :func:`write_trace` (CSV or Parquet); a bad value is one
    InputError line naming the file, its line and column, and the fix."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"Run trace {path} does not exist; {_FIX}.")
    if path.suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError, ValueError) as exc:  # a corrupt footer is an OSError
            raise InputError(f"Cannot read Parquet run trace {path}: {' '.join(str(exc).split())}") from None
        _check_header(path, table.column_names, "the table")
        raw_meta = (table.schema.metadata or {}).get(b"seqpoint", b"{}")
        cols = {c: table.column(c).to_numpy() for c in TRACE_COLUMNS}
        rank = table.column("rank").to_numpy() if "rank" in table.column_names else None
        return RunTrace(**cols, rank=rank, meta=json.loads(raw_meta),
                        rows=_fitting_rows(path, cols, lambda i: f"row {i}"))
    with path.open(newline="") as fh:
        reader = csv.reader(fh)
        header = [h.strip() for h in next(reader, [])]
        _check_header(path, header, "line 1")
        rows = [(lineno, row) for lineno, row in enumerate(reader, start=2) if row]
    if not rows:
        raise InputError(f"{path} has a header but no rows; the run trace is empty.")
    where = {c: header.index(c) for c in (*TRACE_COLUMNS, "rank") if c in header}
    values: dict[str, list[float]] = {c: [] for c in where}
    for lineno, row in rows:
        for c, at in where.items():
            values[c].append(_cell(path, lineno, c, row[at].strip() if at < len(row) else ""))
    meta_file = meta_path(path)
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    rank = values.pop("rank", None)
    lengths = _fitting_rows(path, values, lambda i: f"line {rows[i][0]}")
    return RunTrace(**values, rank=rank, meta=meta, rows=lengths)  # type: ignore[arg-type]


def _cell(path: Path, lineno: int, column: str, raw: str) -> float:
    """One value of a CSV trace: an integer, or a finite number of seconds for ``time_s``."""
    try:
        value = float(raw) if column == "time_s" else int(raw)
        if math.isfinite(value):
            return value
        what = "finite"
    except ValueError:
        what = "a number of seconds" if column == "time_s" else "an integer"
    raise InputError(f"{path}: line {lineno}, column {column!r}: {raw!r} is not {what}; fix or drop that row.")


def _fitting_rows(path: Path, cols: Mapping[str, Any], label: Callable[[int], str]) -> RowLengths | None:
    """The trace's per-row lengths (``<file>.rows.npz``), or None when it has none or they do
    not fit its rows (an old recorder's speech mask): the trace is good without them, so
    they are left out with a warning, not refused."""
    rows = read_rows(path, len(cols["iteration"]))
    if rows is None:
        return None
    bad = rows.mismatch(*(np.asarray(cols[c], dtype=np.int64) for c in ("batch_size", "seq_len", "tgt_len")))
    if bad is None:
        return rows
    warnings.warn(f"{rows_path(path)} does not fit {path}: for {label(bad[0])} it holds {bad[1]}. Its lengths "
                  "are left out and the trace's padded shapes used; record the run again to keep them.",
                  AdjustedInputWarning, stacklevel=3)
    return None
