"""Recording a plain PyTorch training loop as a run trace::

    with seqpoint.integrations.record("trace.csv") as rec:
        for batch in loader:
            with rec.step(batch):
                loss = model(batch).loss
                loss.backward()
                opt.step(); opt.zero_grad()

``rec.step(batch)`` times the block around one optimizer step (synchronized on CUDA, so the
GPU work is timed); with gradient accumulation, time each micro-batch with
``rec.micro_batch(batch)`` and call ``rec.end_step()`` after the optimizer step."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from seqpoint.exceptions import InputError
from seqpoint.integrations._shapes import BatchShape, ShapeFn, ShapeReader, ShapeReading
from seqpoint.schedule import IterationSchedule, RowLengths, RunTrace, write_trace

__all__ = ["Recorder", "record", "row_lengths", "schedule_of", "trace_of", "trace_path"]

#: One recorded micro-batch: optimizer step, epoch, micro-batch within the step, its shape, seconds.
TraceRow = tuple[int, int, int, ShapeReading, float]


def _synchronize() -> None:
    # torch is only consulted when the user's loop already imported it.
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


class Recorder:
    """Collects the shape and time of every (micro-)batch of a loop (parameters as for
    :func:`record`; ``epoch``: the first step's, changed with :meth:`set_epoch`)."""

    def __init__(self, shape_fn: ShapeFn | None = None, *, encoder_decoder: bool = False, epoch: int = 0) -> None:
        self._read = ShapeReader(shape_fn, encoder_decoder=encoder_decoder, who="seqpoint.integrations.record")
        self._epoch = epoch
        self._rows: list[TraceRow] = []
        self._step = self._micro = 0
        self._open = False

    def shape_of(self, batch: object) -> BatchShape:
        return self._read(batch).shape

    def set_epoch(self, epoch: int) -> None:
        self._epoch = epoch

    @contextmanager
    def micro_batch(self, batch: object) -> Iterator[BatchShape]:
        """Time one micro-batch of the current optimizer step (call :meth:`end_step` after)."""
        if self._open:
            # A nested block would record its time twice (inside the outer block's too).
            raise InputError("Recorder blocks cannot nest: close one `with rec.step(...)` or "
                             "`with rec.micro_batch(...)` block before opening the next.")
        reading = self._read(batch)
        _synchronize()
        self._open = True
        start = time.perf_counter()
        try:
            yield reading.shape
        finally:
            self._open = False
        _synchronize()
        self._rows.append((self._step, self._epoch, self._micro, reading, time.perf_counter() - start))
        self._micro += 1

    def end_step(self) -> None:
        """Close the current optimizer step after its micro-batches."""
        if self._micro:
            self._step += 1
            self._micro = 0

    @contextmanager
    def step(self, batch: object) -> Iterator[BatchShape]:
        """Time one whole optimizer step on ``batch`` (one micro-batch)."""
        with self.micro_batch(batch) as shape:
            yield shape
        self.end_step()

    def trace(self, meta: dict[str, object] | None = None) -> RunTrace:
        return trace_of(self._rows, {"recorder": "seqpoint.record", **(meta or {})})

    def __len__(self) -> int:
        return len(self._rows)


class record:  # lower case: it reads as a function, `with record(path) as rec:`
    """Record a plain training loop into a ``.csv`` or ``.parquet`` run trace at ``path``, written when the block exits
    (also when the loop raises after a step): ``with record(path) as rec:`` gives the :class:`Recorder`; wrap each
    optimizer step in ``with rec.step(batch):``. One block per object. ``shape_fn`` (``batch -> Shape(...)``) reads
    batches the default reader (:func:`~seqpoint.integrations.read_batch`, which warns once when it must assume) cannot
    read exactly; ``encoder_decoder`` reads a dict batch's ``labels`` as the target; ``meta`` is extra provenance for
    the trace's sidecar."""

    def __init__(self, path: str | Path, *, shape_fn: ShapeFn | None = None, encoder_decoder: bool = False,
                 meta: dict[str, object] | None = None) -> None:
        self.path = trace_path(path)
        self._shape_fn, self._encoder_decoder, self._meta = shape_fn, encoder_decoder, meta
        self._recorder: Recorder | None = None

    def __enter__(self) -> Recorder:
        if self._recorder is not None:
            raise InputError(f"This record({str(self.path)!r}) block was entered before; call record(path) "
                             "again for another run.")
        self._recorder = Recorder(self._shape_fn, encoder_decoder=self._encoder_decoder)
        return self._recorder

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        rec = self._recorder  # an exception from the loop propagates after the trace is written
        if rec is not None and (exc_type is None or len(rec)):
            write_trace(rec.trace(self._meta), self.path)

    def __getattr__(self, name: str) -> NoReturn:
        if not name.startswith("_") and hasattr(Recorder, name):
            raise InputError(f"record(...) is a context manager: write `with record({str(self.path)!r}) as rec:` "
                             f"and call rec.{name}(...) inside the block.")
        raise AttributeError(name)


def trace_path(path: str | Path) -> Path:
    """``path`` as a run trace's path; InputError unless it ends in ``.csv`` or ``.parquet``."""
    if Path(path).suffix.lower() not in (".csv", ".parquet"):
        raise InputError(f"Cannot record a run trace to {path}: use a .csv or .parquet file name.")
    return Path(path)


def trace_of(rows: list[TraceRow], meta: dict[str, object], rank: int | None = None) -> RunTrace:
    """The run trace of recorded micro-batches (with a ``rank`` column when ``rank`` is given)."""
    extra = {} if rank is None else {"rank": rank}
    table = [{"iteration": step, "epoch": epoch, "micro_batch": micro, **reading.shape._asdict(),
              "time_s": seconds, **extra} for step, epoch, micro, reading, seconds in rows]
    return RunTrace.from_rows(table, meta=meta, lengths=row_lengths([row[3].lengths for row in rows]))


def row_lengths(found: list[tuple[list[int], list[int] | None] | None]) -> RowLengths | None:
    """The trace's per-row lengths when every micro-batch had them (targets when all had)."""
    if not found or any(f is None for f in found):
        return None
    pairs = [f for f in found if f is not None]
    targets = [t for _, t in pairs if t is not None]
    return RowLengths.from_lists([src for src, _ in pairs], targets if len(targets) == len(pairs) else None)


def schedule_of(epochs: list[int], shapes: list[BatchShape], meta: dict[str, object],
                rows: RowLengths | None) -> IterationSchedule:
    """A schedule of one row per (micro-)batch ``shapes``, with their rows' lengths when known."""
    columns = {"epoch": epochs, **{name: [getattr(s, name) for s in shapes] for name in BatchShape._fields}}
    schedule = IterationSchedule.from_columns(columns, meta=meta)
    return schedule if rows is None else schedule.with_rows(rows)
