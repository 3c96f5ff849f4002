"""``SeqPointCallback``: record a real ``trainer.train()`` as a run trace.

Each micro-batch's shape is read where the model sees it (a forward pre-hook), its time between
``on_step_begin`` → ``on_substep_end`` → ``on_step_end`` (the step ``workload_from_trainer``
profiles; the time between steps goes to the meta's ``between_steps_s``). On a GPU nothing waits
for the device: boundaries are CUDA events, inputs are copied to the host without blocking."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from seqpoint.exceptions import InputError
from seqpoint.integrations._recorder import trace_of, trace_path
from seqpoint.integrations._shapes import VALUE_KEYS, ShapeFn, ShapeReader, ShapeReading
from seqpoint.schedule import RunTrace, write_trace

if TYPE_CHECKING:
    import torch

#: A step boundary: a CUDA event on a GPU, a perf_counter reading on a CPU.
Mark: TypeAlias = "float | torch.cuda.Event"

__all__ = ["SeqPointCallback"]


class _HostCopy:
    """A micro-batch's inputs on their way to the host (``non_blocking``: reading a CUDA tensor
    would wait for the device at every micro-batch of the user's run); read once ``done``."""

    def __init__(self, batch: object, every_value: bool) -> None:
        import torch

        def host(value: object, key: object = None) -> object:
            if isinstance(value, torch.Tensor) and value.is_cuda:
                # Only the tensors the default reader reads the values of travel, the others as shapes.
                wanted = every_value or key in VALUE_KEYS
                return value.to("cpu", non_blocking=True) if wanted else torch.empty(value.shape, device="meta")
            if isinstance(value, Mapping):  # a BatchEncoding too
                return {k: host(v, k) for k, v in value.items()}
            return type(value)(host(v) for v in value) if isinstance(value, (list, tuple)) else value

        self.batch: object = host(batch)
        self.done = torch.cuda.Event()
        self.done.record()
        self.reading: ShapeReading | None = None


def _seconds(start: Mark, end: Mark) -> float:
    if isinstance(start, float) and isinstance(end, float):
        return end - start
    assert not isinstance(start, float) and not isinstance(end, float)
    return float(start.elapsed_time(end)) / 1000.0


class SeqPointCallback(TrainerCallback):  # type: ignore[misc]
    """Write every micro-batch's shape and time of ``trainer.train()`` to a ``.csv`` or ``.parquet`` run trace at
    ``path`` at ``on_train_end`` (then in :attr:`trace`, and where in :attr:`written_to`). In a data-parallel run each
    process writes its own, with a ``rank`` column: ``{rank}`` in the name is replaced, else ``.rank<R>`` goes before
    the suffix. ``shape_fn`` (``model_inputs -> Shape(...)``) reads inputs the default reader
    (:func:`~seqpoint.integrations.read_batch`) cannot read exactly."""

    def __init__(self, path: str | Path, *, shape_fn: ShapeFn | None = None) -> None:
        self.path = trace_path(path)
        self.shape_fn = shape_fn
        self.trace: RunTrace | None = None
        self.written_to: Path | None = None
        self._reset()

    def _reset(self) -> None:
        self._rows: list[tuple[int, int, int, ShapeReading | _HostCopy | None, Mark, Mark]] = []
        self._reading: ShapeReading | _HostCopy | None = None
        self._copies: list[_HostCopy] = []  # not read yet, oldest first
        self._in_step = False
        self._micro = self._epoch = self._step = 0
        self._start: Mark = 0.0
        self._last_end: Mark | None = None
        self._gaps: list[tuple[Mark, Mark]] = []
        self._hook: torch.utils.hooks.RemovableHandle | None = None
        self._read = ShapeReader(self.shape_fn, who="SeqPointCallback")
        self._cuda = False

    def _mark(self) -> Mark:
        if not self._cuda:
            return time.perf_counter()
        import torch

        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def _on_forward(self, module: torch.nn.Module, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        # Only the first forward of a training micro-batch counts (not evaluation, not a
        # second call inside a custom compute_loss).
        if not self._in_step or self._reading is not None or not module.training:
            return
        batch = dict(kwargs) if kwargs else (args[0] if args else {})
        if not self._cuda:
            self._reading = self._read(batch)
            return
        self._read_copies(wait=False)
        self._reading = copy = _HostCopy(batch, every_value=self.shape_fn is not None)
        self._copies.append(copy)

    def _read_copies(self, *, wait: bool) -> None:
        """Read the host copies that are done (all, after a synchronization, with ``wait``)."""
        while self._copies and (wait or self._copies[0].done.query()):
            copy = self._copies.pop(0)
            copy.reading, copy.batch = self._read(copy.batch), None

    def _close_micro_batch(self) -> None:
        end = self._mark()
        self._rows.append((self._step, self._epoch, self._micro, self._reading, self._start, end))
        self._start, self._reading = end, None
        self._micro += 1

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, model: torch.nn.Module | None = None, **kwargs: object) -> None:
        self._reset()
        if model is None:
            raise InputError("SeqPointCallback needs the model at on_train_begin; add it with trainer.add_callback.")
        self._cuda = getattr(args.device, "type", "cpu") == "cuda"
        self._read.encoder_decoder = bool(getattr(getattr(model, "config", None), "is_encoder_decoder", False))
        self._hook = model.register_forward_pre_hook(self._on_forward, with_kwargs=True)
        self._step = int(state.global_step)

    def on_epoch_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object) -> None:
        self._epoch = math.floor((state.epoch or 0.0) + 1e-9)

    def on_step_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object) -> None:
        self._in_step, self._micro, self._reading = True, 0, None
        self._start = self._mark()
        if self._last_end is not None:
            self._gaps.append((self._last_end, self._start))

    def on_substep_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object) -> None:
        if self._in_step:
            self._close_micro_batch()

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object) -> None:
        if self._in_step:
            self._close_micro_batch()
            self._last_end = self._start
        self._in_step = False
        self._step += 1

    def on_train_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self._cuda:
            import torch

            torch.cuda.synchronize()
            self._read_copies(wait=True)
        world = int(getattr(args, "world_size", 1) or 1)
        rank = int(getattr(args, "process_index", 0) or 0)
        rows = []
        for step, epoch, micro, read, start, end in self._rows:
            reading = read.reading if isinstance(read, _HostCopy) else read
            if reading is None:
                raise InputError(f"SeqPointCallback saw no forward call of the model in optimizer step {step}; "
                                 "the trainer must call the model it was given (pass shape_fn for custom loops).")
            rows.append((step, epoch, micro, reading, _seconds(start, end)))
        meta = {"recorder": "SeqPointCallback", "device": str(args.device),
                "gradient_accumulation_steps": int(args.gradient_accumulation_steps),
                "world_size": world, "bf16": bool(args.bf16), "fp16": bool(args.fp16),
                "between_steps_s": sum(_seconds(a, b) for a, b in self._gaps)}
        self.trace = trace_of(rows, meta, rank if world > 1 else None)
        self.written_to = write_trace(self.trace, self._path_for(rank, world))
        self._reset()  # no CUDA event is kept: the callback pickles with its trainer

    def _path_for(self, rank: int, world: int) -> Path:
        if "{rank}" in str(self.path):
            return Path(str(self.path).replace("{rank}", str(rank)))
        if world > 1:
            return self.path.with_name(f"{self.path.stem}.rank{rank}{self.path.suffix}")
        return self.path
