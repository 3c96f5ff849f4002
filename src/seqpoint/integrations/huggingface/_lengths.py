"""Per-sample lengths of a Trainer's dataset, for its sampler and the collator's padding rule,
read from one column (through Arrow for a ``datasets.Dataset``), tokenizing nothing."""

from __future__ import annotations

from collections.abc import Sized
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import InputError

if TYPE_CHECKING:
    from transformers import Trainer

__all__ = ["Lengths", "check_trainer", "read_lengths"]

IntArray = NDArray[np.int64]

_WAY_OUT = (
    "record the real run instead with trainer.add_callback(SeqPointCallback('trace.csv')) "
    "and read the trace"
)


class Lengths(NamedTuple):
    """Every sample's length: the model input's and the labels' (``source``, ``target``: None
    without such a column) and the one the train sampler sorts by (``sampler``)."""

    source: IntArray | None
    target: IntArray | None
    sampler: IntArray


def _column_lengths(dataset: Any, name: str) -> IntArray:
    """Lengths of a list column (or the values of an int column) of a datasets.Dataset."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = dataset.select_columns([name]).with_format("arrow")[:]
    column = table.column(name)
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        return np.asarray(pc.list_value_length(column).to_numpy(zero_copy_only=False), dtype=np.int64)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)


def _item_lengths(dataset: Any, name: str) -> IntArray | None:
    first = dataset[0]
    if not hasattr(first, "keys") or name not in first:
        return None
    values = [dataset[i][name] for i in range(len(dataset))]
    return np.array([v if isinstance(v, (int, np.integer)) else len(v) for v in values], dtype=np.int64)


def check_trainer(trainer: Trainer, *, step: bool = False) -> None:
    """Raise unless ``trainer`` looks like a ``transformers.Trainer`` (not its model or args)
    and, with ``step``, its training step runs on one device as ``train()`` runs it."""
    missing = [a for a in ("args", "model", "train_dataset", "data_collator") if not hasattr(trainer, a)]
    if missing:
        raise InputError(
            f"Expected a transformers.Trainer, got a {type(trainer).__name__} (it has no "
            f"{', '.join(missing)}): pass the Trainer itself, e.g. schedule_from_trainer(trainer)."
        )
    if not step:
        return
    gpus = int(getattr(trainer.args, "n_gpu", 1) or 1)
    if gpus > 1:
        raise InputError(
            f"The trainer sees {gpus} GPUs in one process, so train() wraps the model in DataParallel and "
            f"each micro-batch is {gpus} devices' batches, which one profiled step cannot run: profile with one "
            "GPU visible (CUDA_VISIBLE_DEVICES=0), or launch the job with torchrun (one process a GPU).")
    for flag, name in (("is_deepspeed_enabled", "DeepSpeed"), ("is_fsdp_enabled", "FSDP")):
        if getattr(trainer, flag, False):
            raise InputError(
                f"The trainer runs under {name}, whose engine owns the step (and would step the real model), "
                f"so a copy of it cannot be profiled: profile the job on one GPU with a trainer made without {name} "
                "(the same model and arguments otherwise).")


def read_lengths(trainer: Trainer, *, with_target: bool = False) -> Lengths:
    """The lengths of ``trainer.train_dataset`` (``with_target``: the labels' too), read without
    tokenizing; InputError for a missing, empty or iterable dataset, or a length-grouping
    sampler without a length or input column."""
    import torch

    check_trainer(trainer)
    dataset = trainer.train_dataset
    if dataset is None:
        raise InputError(f"The trainer has no train_dataset, so there is nothing to replay; {_WAY_OUT}.")
    if isinstance(dataset, torch.utils.data.IterableDataset) or not isinstance(dataset, Sized):
        raise InputError(
            f"The trainer's train_dataset is a {type(dataset).__name__} (iterable, without per-sample "
            f"lengths), so its batches cannot be replayed; {_WAY_OUT}."
        )
    if len(dataset) == 0:
        raise InputError(f"The trainer's train_dataset is empty, so there is nothing to replay; give it samples "
                         f"or {_WAY_OUT}.")
    args = trainer.args
    processing = getattr(trainer, "processing_class", None)
    names = getattr(processing, "model_input_names", None) or ["input_ids"]
    input_name = names[0]
    length_name = args.length_column_name
    columns = getattr(dataset, "column_names", None)

    def lengths_of(name: str) -> IntArray | None:
        if columns is not None:
            return _column_lengths(dataset, name) if name in columns else None
        return _item_lengths(dataset, name)

    source = lengths_of(input_name)
    length_column = lengths_of(length_name)
    # group_by_length sorts by the length column of a datasets.Dataset only while it
    # survives remove_unused_columns; otherwise HF measures the model input, as here.
    kept = columns is not None and not args.remove_unused_columns
    if columns is not None and args.remove_unused_columns:
        trainer._set_signature_columns_if_needed()
        kept = length_name in (trainer._signature_columns or [])
    sampler = length_column if (length_column is not None and kept) else source
    if sampler is None:
        if args.train_sampling_strategy in ("group_by_length", "batch_rebalance"):
            raise InputError(
                f"The trainer's train_dataset has no {length_name!r} or {input_name!r} column, so "
                f"the {args.train_sampling_strategy} sampler's lengths are unknown; add a {length_name!r} column (tokens per sample) "
                f"or {_WAY_OUT}."
            )
        sampler = np.zeros(len(dataset), dtype=np.int64)  # a random or sequential sampler reads len() only
    target = lengths_of("labels") if with_target and source is not None else None
    return Lengths(source, target, sampler)
