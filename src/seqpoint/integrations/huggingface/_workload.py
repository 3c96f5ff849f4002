"""``workload_from_trainer``: the trainer's own training step as a seqpoint workload, and
``project_trainer``: a Trainer job projected (and checked) in one call."""

from __future__ import annotations

import contextlib
import copy
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from seqpoint._rng import rngs_kept
from seqpoint._signature import Signature
from seqpoint.exceptions import AssumedInputWarning, SeqPointWarning
from seqpoint.executors import Executor
from seqpoint.integrations.huggingface._collate import Collation, check_trainer
from seqpoint.integrations.huggingface._replay import schedule_from_trainer
from seqpoint.schedule import IterationSchedule, RunTrace, read_trace
from seqpoint.workflows import JobProjection, project_job
from seqpoint.workloads import BatchShape

if TYPE_CHECKING:
    import torch
    from transformers import Trainer, TrainingArguments

#: A batch of the model's inputs: tensors, and the varlen maximum lengths (ints).
Batch = dict[str, "torch.Tensor | int"]

#: Keys of a packed row that follow from its documents (flash-attention varlen arguments).
_VARLEN_KEYS = frozenset({"cu_seq_lens_q", "cu_seq_lens_k", "max_length_q", "max_length_k", "seq_idx"})

__all__ = ["TrainerWorkload", "project_trainer", "workload_from_trainer"]


class TrainerWorkload:
    """One optimizer step of ``trainer.train()`` (:meth:`step`) on a copy of the model prepared as ``train()`` prepares
    it, with an optimizer, scheduler and accelerator made for the copy: the user's states are never touched. Inputs are
    synthetic ids padded as the collator pads the SeqPoint's real lengths (which tensors a batch has is learnt by
    running the collator once), under the trainer's autocast. It pickles as the trainer's model and arguments."""

    def __init__(self, trainer: Any, *, seed: int = 0, _keys: frozenset[str] | None = None) -> None:
        self._keys = self._collator_keys(trainer) if _keys is None else _keys
        self.trainer = trainer = _own_trainer(trainer)
        with _without_amp_forward(trainer.model):
            self.model = copy.deepcopy(trainer.model)
        self.model.train()
        args = trainer.args
        checkpointing = self._as_train_prepares(args)
        # As train(): the scheduler over the optimizer, which the accelerator then prepares (its
        # step goes through the accelerator's GradScaler under fp16). The schedule's length shapes
        # only the learning-rate curve, not the step's cost; a long one keeps the rate above zero.
        optimizer = trainer.create_optimizer(self.model)
        self.scheduler = trainer.create_scheduler(10**9, optimizer=optimizer)
        self.optimizer = trainer.optimizer = trainer.accelerator.prepare_optimizer(optimizer)
        # training_step reads the accumulation count train() sets per step; a profiled step is
        # one micro-batch of a one-micro-batch step.
        trainer.current_gradient_accumulation_steps = 1
        #: Steps run, and those whose optimizer the GradScaler skipped (inf/NaN grads).
        self.steps = self.skipped_steps = 0
        model_config = getattr(self.model, "config", None)
        self.name = f"hf:{type(self.model).__name__}"
        self.max_grad_norm = float(getattr(args, "max_grad_norm", 0.0) or 0.0)
        self.config: dict[str, object] = {
            "model": type(self.model).__name__,
            "model_config": model_config.to_dict() if model_config is not None else {},
            "optim": str(getattr(args, "optim", "")), "learning_rate": float(args.learning_rate),
            "lr_scheduler_type": str(getattr(args, "lr_scheduler_type", "")), "max_grad_norm": self.max_grad_norm,
            "bf16": bool(args.bf16), "fp16": bool(args.fp16), "device": str(args.device),
            "activation_checkpointing": checkpointing, "torch_compile": bool(getattr(args, "torch_compile", False)),
            "seed": seed,
        }
        self.seed = seed
        self.device = args.device
        self.vocab_size = int(getattr(model_config, "vocab_size", 2) or 2)
        self.encoder_decoder = bool(getattr(model_config, "is_encoder_decoder", False))
        processing = getattr(trainer, "processing_class", None)
        pad = getattr(processing, "pad_token_id", None)
        self.pad_id = int((getattr(model_config, "pad_token_id", None) if pad is None else pad) or 0)
        self.padding_side = str(getattr(processing, "padding_side", "right") or "right")
        self._packing = "position_ids" in self._keys and "attention_mask" not in self._keys
        if args.bf16 or args.fp16:
            # As train()'s accelerate prepares the model: the forward autocast (not the backward
            # or the optimizer) and its outputs (the logits too) given back in fp32.
            from accelerate.utils import convert_outputs_to_fp32

            self.model.forward = convert_outputs_to_fp32(self._autocast_forward(self.model.forward))

    def _as_train_prepares(self, args: TrainingArguments) -> bool:
        """Do to the copy what ``train()`` does before its first step: activation checkpointing
        (TRL turns it on; without it a profiled step cost 16-20% less than a recorded one) and
        ``torch_compile``; whether checkpointing is on."""
        on = getattr(args, "activation_checkpointing", None)
        if on is None:  # transformers before activation_checkpointing
            on = getattr(args, "gradient_checkpointing", False)
        # Each name where the model has it: reading is_gradient_checkpointing where
        # is_activation_checkpointing exists is a transformers FutureWarning.
        already = getattr(self.model, "is_activation_checkpointing", None)
        if already is None:  # transformers before activation_checkpointing
            already = getattr(self.model, "is_gradient_checkpointing", False)
        if on and not already:
            kwargs = dict(getattr(args, "activation_checkpointing_kwargs", None)
                          or getattr(args, "gradient_checkpointing_kwargs", None) or {})
            layers, offload = kwargs.pop("every_n_layers", 1), kwargs.pop("offload", False)
            if hasattr(self.model, "activation_checkpointing_enable"):
                self.model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs or None,
                                                           every_n_layers=layers, offload=offload)
            else:
                self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs or None)
        if getattr(args, "torch_compile", False):
            import torch

            self.model = torch.compile(self.model, backend=args.torch_compile_backend or "inductor",
                                       mode=args.torch_compile_mode)
            if args.torch_compile_mode in ("reduce-overhead", "max-autotune"):
                warnings.warn(f"torch_compile_mode = {args.torch_compile_mode!r} replays CUDA graphs: a step's time is the "
                              "replay's, as in train(), but a replayed kernel has no launching op, so the breakdown files "
                              "it by its kernel name alone.", SeqPointWarning, stacklevel=2)
        return bool(on or already)

    def __reduce__(self) -> tuple[Any, ...]:
        # A worker rebuilds it from the trainer's model and arguments, pickled once: the collator's keys travel instead
        # of the datasets, and the worker makes its own model copy, optimizer, scheduler and accelerator (whose
        # process-wide state holds weakrefs). Pickled here, while the model is without accelerate's forward (which
        # refuses to); cloudpickle (the torch extra's) also takes the hooks and closures a prepared model has.
        try:
            import cloudpickle as pickler
        except ImportError:
            import pickle as pickler

        light = _own_trainer(self.trainer, accelerator=False)
        with _without_amp_forward(light.model):
            data = pickler.dumps(light)
        return (_rebuilt, (data, self.seed, self._keys))

    def _collator_keys(self, trainer: Any) -> frozenset[str]:
        """The tensors the trainer's collator gives the model (from the dataset's first rows)."""
        dataset = getattr(trainer, "train_dataset", None)
        if dataset is None or not hasattr(dataset, "__len__") or len(dataset) == 0:
            warnings.warn(
                "workload_from_trainer: the trainer has no map-style train_dataset to run its collator on, so the "
                "profiled batches assume a padded batch of input_ids, attention_mask and labels.",
                AssumedInputWarning, stacklevel=3)
            return frozenset({"input_ids", "attention_mask", "labels"})
        collation = Collation(trainer)
        rows = min(len(dataset), max(int(trainer.args.per_device_train_batch_size), 2))
        with rngs_kept():
            batch = collation.batch(np.arange(rows, dtype=np.int64))
        keys = frozenset(batch)
        made = {"input_ids", "labels", "token_type_ids", "decoder_input_ids"}
        made |= ({"position_ids"} | _VARLEN_KEYS) if "attention_mask" not in keys else {"attention_mask"}
        if keys - made:
            warnings.warn(
                f"workload_from_trainer: the collator {collation.name} also gives the model "
                f"{', '.join(sorted(keys - made))}, which the profiled batches leave out (they have "
                f"{', '.join(sorted(keys & made))}).", AssumedInputWarning, stacklevel=3)
        return keys

    def _autocast_forward(self, forward: Callable[..., object]) -> Callable[..., object]:
        import torch

        dtype = torch.bfloat16 if self.trainer.args.bf16 else torch.float16

        def autocast_forward(*args: object, **kwargs: object) -> object:
            with torch.autocast(device_type=self.device.type, dtype=dtype):
                return forward(*args, **kwargs)

        return autocast_forward

    takes_batch_shape = True

    def make_batch(self, signature: Signature | BatchShape) -> Batch:
        """Token ids, attention mask and labels of shape ``(batch_size, seq_len)``, as the collator builds them from
        samples of the shape's lengths (padding on the tokenizer's side, labels -100 there; for the flattening collator
        one packed row with restarting ``position_ids``); a bare signature gives full rows."""
        import torch

        shape = BatchShape.of(signature, workload=self.name)
        seed = int(shape.digest()[:15], 16) ^ self.seed if shape.exact else hash((self.seed, *shape.signature)) % 2**31
        gen = torch.Generator().manual_seed(seed)
        # Ids above the special tokens' usual range, so no id is a pad/mask by accident.
        low = min(5, self.vocab_size - 1)
        if self._packing and shape.exact:
            ids = torch.randint(low, self.vocab_size, (1, shape.seq_len), generator=gen)
            pos = torch.cat([torch.arange(int(n)) for n in shape.lengths.tolist()])
            labels = ids.clone()
            labels[0, pos == 0] = -100  # the collator's separator: no loss across documents
            packed: Batch = {"input_ids": ids, "position_ids": pos[None, :], "labels": labels}
            packed.update(self._varlen(shape.lengths))
            return {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in packed.items()}
        ids = torch.randint(low, self.vocab_size, (shape.batch_size, shape.seq_len), generator=gen)
        mask = self._mask(torch.as_tensor(shape.lengths), shape.seq_len)
        ids[~mask] = self.pad_id
        batch = {"input_ids": ids, "attention_mask": mask.long()}
        if self.encoder_decoder:
            width = max(shape.tgt_len, 1)
            labels = torch.randint(low, self.vocab_size, (shape.batch_size, width), generator=gen)
            if shape.exact:  # full-length rows of a bare signature have a target even at tgt_len 0
                labels[~self._mask(torch.as_tensor(shape.tgt_lengths), width)] = -100
        else:
            labels = ids.masked_fill(~mask, -100)
        batch["labels"] = labels
        # token_type_ids and decoder_input_ids where the collator gives them
        if "token_type_ids" in self._keys:
            batch["token_type_ids"] = torch.zeros_like(batch["input_ids"])
        if "decoder_input_ids" in self._keys and hasattr(self.model, "prepare_decoder_input_ids_from_labels"):
            batch["decoder_input_ids"] = self.model.prepare_decoder_input_ids_from_labels(labels=batch["labels"])
        return {k: v.to(self.device) for k, v in batch.items()}

    def _varlen(self, lengths: NDArray[np.int64]) -> Batch:
        """The flash-attention varlen arguments of a packed row, where the collator gives them."""
        import torch

        docs = torch.as_tensor(np.asarray(lengths, dtype=np.int64))
        cu = torch.cat([torch.zeros(1, dtype=torch.int64), docs.cumsum(0)]).to(torch.int32)
        longest = int(docs.max())
        seq_idx = torch.repeat_interleave(torch.arange(docs.numel(), dtype=torch.int32), docs)[None]
        out: Batch = {"cu_seq_lens_q": cu, "cu_seq_lens_k": cu, "max_length_q": longest,
                      "max_length_k": longest, "seq_idx": seq_idx}
        return {k: v for k, v in out.items() if k in self._keys}

    def _mask(self, lengths: torch.Tensor, width: int) -> torch.Tensor:
        """``(rows, width)`` True on real positions, padded on the tokenizer's side."""
        import torch

        pos = torch.arange(width)[None, :]
        return pos < lengths[:, None] if self.padding_side == "right" else pos >= width - lengths[:, None]

    def step(self, batch: Batch) -> float:
        """One optimizer step on ``batch`` as ``train()`` runs it, through the workload's own
        accelerator (``training_step``, clipping, optimizer, scheduler, ``zero_grad``); the loss.
        Under fp16 a step whose grads the GradScaler finds inf/NaN skips the optimizer and
        scheduler, as in ``train()``, and a ``SeqPointWarning`` counts such steps."""
        acc = self.trainer.accelerator
        scale = None if acc.scaler is None else acc.scaler.get_scale()  # between timed steps the device is idle
        loss = self.trainer.training_step(self.model, batch)
        acc.clip_grad_norm_(self.model.parameters(), self.max_grad_norm if self.max_grad_norm > 0 else math.inf)
        self.optimizer.step()
        if not acc.optimizer_step_was_skipped:
            self.scheduler.step()
        self.model.zero_grad(set_to_none=True)
        value = float(loss)
        self.steps += 1
        # The scale drops when the scaler found inf/NaN grads: a fused optimizer skips on the
        # device, which accelerate's optimizer_step_was_skipped does not see.
        if scale is not None and acc.scaler.get_scale() < scale:
            self.skipped_steps += 1
            warnings.warn(
                f"{self.name}: fp16 loss scaling found inf/NaN gradients in {self.skipped_steps} of the {self.steps} "
                "steps run so far, which skipped the optimizer update as train() does while its GradScaler lowers "
                "the scale: a timed step among them costs less than a steady-state step (a fresh scale does this "
                "in its first steps; [profile] warmup steps keep them untimed).", SeqPointWarning, stacklevel=2)
        return value


def workload_from_trainer(trainer: Any, *, seed: int = 0) -> TrainerWorkload:
    """A seqpoint workload running ``trainer``'s model (copied, never trained), optimizer and
    loss on synthetic inputs drawn from ``seed``: profile, cache and project it like a built-in one."""
    check_trainer(trainer, step=True)
    return TrainerWorkload(trainer, seed=seed)


def _own_trainer(trainer: Any, *, accelerator: bool = True) -> Any:
    """A shallow copy of ``trainer`` with what a step needs: no datasets, optimizer, scheduler or callbacks (a trained
    optimizer's state is twice the model), and an accelerator of its own (``accelerator``; else none, for pickling), so
    a step never touches the user's states, GradScaler included."""
    own = copy.copy(trainer)
    own.train_dataset = own.eval_dataset = own.optimizer = own.lr_scheduler = own.callback_handler = None
    if accelerator:
        own.create_accelerator_and_postprocess()
    else:
        own.accelerator = own.gather_function = None
    own.model_wrapped = own.model
    return own


@contextlib.contextmanager
def _without_amp_forward(model: Any) -> Iterator[None]:
    """``model`` without the forward ``train()``'s accelerate gave it under fp16/bf16 (autocast, outputs back in fp32:
    it refuses to pickle) while the block runs: its forward is the one before (the class's, or TRL's fused LM head);
    :class:`TrainerWorkload` wraps its own copy's forward as accelerate does."""
    state = vars(model)
    if "_original_forward" not in state:
        yield
        return
    saved = {key: state.pop(key) for key in ("forward", "_original_forward") if key in state}
    before = saved["_original_forward"]
    if getattr(before, "__func__", None) is not type(model).forward:
        state["forward"] = before
    try:
        yield
    finally:
        state.pop("forward", None)
        state.update(saved)


def _rebuilt(data: bytes, seed: int, keys: frozenset[str]) -> TrainerWorkload:
    import pickle

    return TrainerWorkload(pickle.loads(data), seed=seed, _keys=keys)


def project_trainer(trainer: Trainer, *, traces: Sequence[RunTrace | str | Path] | None = None, n_points: int = 10,
                    processes: int = 1, cold_window: int | None = None, first_n: int = 10,
                    progress: bool = False, executor: Executor | str = "local") -> JobProjection:
    """``trainer.train()``'s whole run projected from SeqPoints of the trainer's own step (its model copied, never
    trained); ``print(result)`` shows the projection, its interval, the profiling cost and, with ``traces``, the error
    against them. ``traces`` are runs recorded with :class:`SeqPointCallback`: the first one's micro-batches are the
    schedule, and the projection is checked against their mean (two or more give the noise floor); without them the run
    is replayed (:func:`schedule_from_trainer`). The other parameters are :func:`seqpoint.workflows.project_job`'s."""
    workload = workload_from_trainer(trainer)  # first: a trainer it refuses is refused before the replay
    runs = None if traces is None else [t if isinstance(t, RunTrace) else read_trace(t) for t in traces]
    schedule: RunTrace | IterationSchedule = runs[0] if runs else schedule_from_trainer(trainer)
    return project_job(schedule, workload, traces=runs, n_points=n_points, processes=processes,
                       cold_window=cold_window, first_n=first_n, progress=progress, executor=executor)
