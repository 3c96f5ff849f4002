"""The trainer's data as ``train()`` sees it: its dataset's per-sample lengths, read from one
column without tokenizing, and each micro-batch's shape, from the trainer's collator run on its
rows (:class:`Collation`) or, as collating costs ~5 ms a micro-batch, for transformers' own
collators from a padding rule of the lengths checked against the collator (:func:`rule_holds`)."""

from __future__ import annotations

import functools
import types
from collections.abc import Mapping, Sized
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from seqpoint._signature import IntArray
from seqpoint.exceptions import InputError
from seqpoint.integrations._shapes import BatchShape, ShapeReader, ShapeReading
from seqpoint.schedule import round_up

if TYPE_CHECKING:
    from transformers import Trainer

__all__ = ["Collation", "Lengths", "PaddingRule", "check_trainer", "known_rule", "read_lengths", "rule_holds"]

_WAY_OUT = "record the real run instead with trainer.add_callback(SeqPointCallback('trace.csv')) and read the trace"


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
        raise InputError(f"Expected a transformers.Trainer, got a {type(trainer).__name__} (it has no "
                         f"{', '.join(missing)}): pass the Trainer itself, e.g. schedule_from_trainer(trainer).")
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
    """The lengths of ``trainer.train_dataset`` (``with_target``: the labels' too), read without tokenizing; InputError
    for a missing, empty or iterable dataset, or a length-grouping sampler without a length or input column."""
    import torch

    dataset = trainer.train_dataset
    if dataset is None:
        raise InputError(f"The trainer has no train_dataset, so there is nothing to replay; {_WAY_OUT}.")
    if isinstance(dataset, torch.utils.data.IterableDataset) or not isinstance(dataset, Sized):
        raise InputError(f"The trainer's train_dataset is a {type(dataset).__name__} (iterable, without per-sample "
                         f"lengths), so its batches cannot be replayed; {_WAY_OUT}.")
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
            raise InputError(f"The trainer's train_dataset has no {length_name!r} or {input_name!r} column, so "
                             f"the {args.train_sampling_strategy} sampler's lengths are unknown; add a "
                             f"{length_name!r} column (tokens per sample) or {_WAY_OUT}.")
        sampler = np.zeros(len(dataset), dtype=np.int64)  # a random or sequential sampler reads len() only
    target = lengths_of("labels") if with_target and source is not None else None
    return Lengths(source, target, sampler)


def _unwrap(collator: object) -> object:
    # Trainer wraps the collator of a dataset that is not a datasets.Dataset to drop unused keys.
    return getattr(collator, "data_collator", collator) if type(collator).__name__ == "RemoveColumnsCollator" else collator


def collator_name(collator: object) -> str:
    """A readable name of a collator: its class, function (``<lambda>``) or ``partial(f)``."""
    c = _unwrap(collator)
    if isinstance(c, functools.partial):
        return f"partial({collator_name(c.func)})"
    if isinstance(c, types.FunctionType | types.MethodType | types.BuiltinFunctionType):
        return str(c.__qualname__).rpartition("<locals>.")[2]
    package = type(c).__module__.partition(".")[0]
    name = type(c).__qualname__.rpartition("<locals>.")[2]
    return name if package == "__main__" else f"{package}.{name}"


class PaddingRule(NamedTuple):
    """How one of transformers' own collators turns a micro-batch's lengths into its shape."""

    kind: str  # "pad", "seq2seq", "flatten"
    padding: object
    max_length: int | None
    multiple: int

    def pad(self, lengths: IntArray) -> int:
        """Padded length of ``lengths`` (tokenizer.pad semantics)."""
        longest = int(lengths.max())
        strategy = getattr(self.padding, "value", self.padding)
        if strategy == "max_length" and self.max_length is not None:
            longest = self.max_length
        return int(round_up(np.array([longest]), self.multiple)[0])

    def row(self, source: IntArray, target: IntArray | None) -> BatchShape:
        tokens = int(source.sum())
        sum_sq = int((source * source).sum())
        if self.kind == "flatten":
            return BatchShape(1, tokens, 0, tokens, sum_sq)
        tgt_len = 0
        if self.kind == "seq2seq" and target is not None:
            tgt_len = self.pad(target)
            tokens += int(target.sum())
        return BatchShape(int(source.size), self.pad(source), tgt_len, tokens, sum_sq)


def known_rule(collator: object, *, encoder_decoder: bool) -> PaddingRule | None:
    """The padding rule of one of transformers' own collators (the exact class; a subclass or a wrapper may do
    anything), else None. ``DataCollatorForSeq2Seq`` pads a target only for an encoder-decoder model."""
    import transformers as tf

    c = _unwrap(collator)
    kind = {tf.DataCollatorWithPadding: "pad", tf.DataCollatorForLanguageModeling: "pad",
            tf.DataCollatorForTokenClassification: "pad",
            tf.DataCollatorForSeq2Seq: "seq2seq" if encoder_decoder else "pad",
            tf.DataCollatorWithFlattening: "flatten"}.get(type(c))
    if kind is None:
        return None
    padding = getattr(c, "padding", True)
    if getattr(padding, "value", padding) == "max_length" and getattr(c, "max_length", None) is None:
        return None  # pads to the tokenizer's model_max_length: let the collator say it
    return PaddingRule(kind, padding, getattr(c, "max_length", None), int(getattr(c, "pad_to_multiple_of", None) or 1))


def _is_hf_dataset(dataset: object) -> bool:
    """Whether ``dataset`` is a ``datasets.Dataset`` (a torch Dataset needs no ``datasets``)."""
    try:
        import datasets
    except ImportError:
        return False
    return isinstance(dataset, datasets.Dataset)


class Collation:
    """A trainer's collator run on its dataset's rows (after ``remove_unused_columns``), as the
    training DataLoader runs it."""

    def __init__(self, trainer: Any) -> None:
        dataset = trainer.train_dataset
        collator = trainer.data_collator
        if _is_hf_dataset(dataset):
            try:
                dataset = trainer._remove_unused_columns(dataset, description="training")
            except ValueError as exc:  # what train() would raise first
                raise InputError(f"The trainer's train_dataset cannot be loaded as train() loads it: "
                                 f"{str(exc).strip()}") from None
        else:
            collator = trainer._get_collator_with_removed_columns(collator, description="training")
        self.dataset = dataset
        self.collator = collator
        self.name = collator_name(trainer.data_collator)
        config = getattr(trainer.model, "config", None)
        self.encoder_decoder = bool(getattr(config, "is_encoder_decoder", False))
        self.read_batch = ShapeReader(encoder_decoder=self.encoder_decoder,
                                      who=f"schedule_from_trainer ran the collator {self.name}, then",
                                      fix="the model computes what the batch holds, as seqpoint counts it")

    def batch(self, indices: IntArray) -> Mapping[str, object]:
        """What the model receives for the micro-batch of ``indices`` (the rows fetched as
        torch's map-style fetcher gets them)."""
        ids = [int(i) for i in indices]
        getitems = getattr(self.dataset, "__getitems__", None)
        rows = list(getitems(ids)) if getitems is not None else [self.dataset[i] for i in ids]
        try:
            return self.collator(rows)
        except Exception as exc:  # a user's collator may raise anything: name it and its rows, keep the cause
            raise InputError(
                f"The trainer's collator {self.name} failed on the dataset rows {indices[:8].tolist()} "
                f"({type(exc).__name__}: {str(exc).strip()[:200]}); train() would fail the same way: fix the "
                "collator or the dataset."
            ) from exc

    def read(self, indices: IntArray) -> ShapeReading:
        """The shape the model sees for the micro-batch of ``indices`` (warns once when the
        collator's output does not say its rows' real lengths)."""
        return self.read_batch(self.batch(indices))


def rule_holds(collation: Collation, rule: PaddingRule, micro_batches: list[IntArray],
               source: IntArray, target: IntArray | None, *, samples: int = 16) -> int | None:
    """Check ``rule`` against the collator on up to ``samples`` micro-batches spread over the
    run (the first and the last included); the first one that differs, or None."""
    n = len(micro_batches)
    picks = sorted({round(float(v)) for v in np.linspace(0, n - 1, min(samples, n))})
    for i in picks:
        ids = micro_batches[i]
        expected = rule.row(source[ids], None if target is None else target[ids])
        if collation.read(ids).shape != expected:
            return i
    return None
