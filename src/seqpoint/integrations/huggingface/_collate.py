"""The shape of each micro-batch, from the trainer's own collator run on its dataset rows
(:class:`Collation`), or, as collating costs about 5 ms a micro-batch, for transformers' own
collators from a padding rule of the lengths checked against the collator (:func:`rule_holds`)."""

from __future__ import annotations

import functools
import types
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import InputError
from seqpoint.integrations._shapes import BatchShape, ShapeReader, ShapeReading
from seqpoint.schedule import round_up

__all__ = ["Collation", "PaddingRule", "known_rule"]

IntArray = NDArray[np.int64]


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
    label_multiple: int

    def pad(self, lengths: IntArray, *, labels: bool = False) -> int:
        """Padded length of ``lengths`` (tokenizer.pad semantics)."""
        longest = int(lengths.max())
        strategy = getattr(self.padding, "value", self.padding)
        if strategy == "max_length" and self.max_length is not None:
            longest = self.max_length
        multiple = self.label_multiple if labels else self.multiple
        return int(round_up(np.array([longest]), multiple)[0])

    def row(self, source: IntArray, target: IntArray | None) -> BatchShape:
        """The shape of one micro-batch of samples of these lengths."""
        tokens = int(source.sum())
        sum_sq = int((source * source).sum())
        if self.kind == "flatten":
            return BatchShape(1, tokens, 0, tokens, sum_sq)
        tgt_len = 0
        if self.kind == "seq2seq" and target is not None:
            tgt_len = self.pad(target, labels=True)
            tokens += int(target.sum())
        return BatchShape(int(source.size), self.pad(source), tgt_len, tokens, sum_sq)


def known_rule(collator: object, *, encoder_decoder: bool) -> PaddingRule | None:
    """The padding rule of one of transformers' own collators (the exact class; a subclass or a
    wrapper may do anything), else None. ``DataCollatorForSeq2Seq`` pads a target only for an
    encoder-decoder model."""
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
    multiple = int(getattr(c, "pad_to_multiple_of", None) or 1)
    return PaddingRule(kind, padding, getattr(c, "max_length", None), multiple, multiple)


class Collation:
    """A trainer's collator run on its dataset's rows (after ``remove_unused_columns``), as the
    training DataLoader runs it."""

    def __init__(self, trainer: Any) -> None:
        import datasets

        dataset = trainer.train_dataset
        collator = trainer.data_collator
        if isinstance(dataset, datasets.Dataset):
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
