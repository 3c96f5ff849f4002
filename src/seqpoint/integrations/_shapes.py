"""Reading the shape that fixes a batch's cost from the batch itself (duck-typed: no torch
import), or from the :class:`Shape` a user's ``shape_fn`` returns; one :class:`ShapeReader`
for the recorder, the Trainer callback and the Trainer replay."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypeGuard

import numpy as np

from seqpoint.exceptions import AssumedInputWarning, InputError
from seqpoint.schedule import RowLengths

__all__ = ["INPUT_KEYS", "VALUE_KEYS", "BatchShape", "Shape", "ShapeFn", "ShapeReader", "ShapeReading", "read_batch"]

#: Keys of the model input in a dict batch, tried in order (text, then speech, then embeddings).
INPUT_KEYS: tuple[str, ...] = ("input_ids", "input_values", "input_features", "inputs_embeds", "x", "src")
#: The tensors of a dict batch whose values :func:`read_batch` reads (of the others, the shape).
VALUE_KEYS: frozenset[str] = frozenset({"attention_mask", "position_ids", "labels"})


class BatchShape(NamedTuple):
    """The cost-fixing shape of one (micro-)batch, as a run-trace row stores it."""

    batch_size: int
    seq_len: int
    tgt_len: int
    tokens: int
    sum_sq_len: int


class Shape(NamedTuple):
    """What a ``shape_fn`` returns: a batch's shape and, when known, every row's real length:
    ``Shape(batch_size=8, seq_len=1200, lengths=batch["feature_lens"].tolist())`` for 8 utterances padded to 1,200
    frames (``batch_size`` 1 for a packed row, whose ``lengths`` are its documents'); ``tgt_len`` is an
    encoder-decoder's padded target length. ``tokens`` and ``sum_sq_len`` follow from the lengths (every row ``seq_len``
    long when None)."""

    batch_size: int
    seq_len: int
    tgt_len: int = 0
    lengths: Sequence[int] | None = None
    tgt_lengths: Sequence[int] | None = None


#: A user's shape reader: ``batch -> Shape`` (or the five values ``(batch_size, seq_len,
#: tgt_len, tokens, sum_sq_len)`` of a trace row).
ShapeFn = Callable[[Any], object]


class ShapeReading(NamedTuple):
    """A batch's shape, its rows' real lengths when the batch says them, and what was assumed."""

    shape: BatchShape
    lengths: tuple[list[int], list[int] | None] | None
    """``(lengths, tgt_lengths)`` of every sequence, or None when the batch does not say."""
    assumed: str | None


class _Tensor(Protocol):
    """What the reader uses of a tensor (torch's, numpy's): duck-typed, so no torch import."""

    @property
    def shape(self) -> Sequence[int]: ...
    def tolist(self) -> list[Any]: ...
    def sum(self, dim: int) -> _Tensor: ...
    def __getitem__(self, index: int) -> _Tensor: ...
    def __ne__(self, other: object) -> _Tensor: ...  # type: ignore[override]


def _is_tensor(x: object) -> TypeGuard[_Tensor]:
    return hasattr(x, "shape") and hasattr(x, "tolist") and len(getattr(x, "shape", ())) >= 1


def _dims(t: _Tensor) -> tuple[int, ...]:
    return tuple(int(d) for d in t.shape)


def _rows(t: _Tensor) -> tuple[int, int]:
    shape = _dims(t)
    return (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])  # 1-D: one unbatched sequence


def _flattened_documents(position_ids: object) -> list[int] | None:
    """Document lengths of a padding-free packed row: ``position_ids`` of shape ``(1, n)``
    restarting at 0 for every document; None for anything else."""
    if not _is_tensor(position_ids) or len(position_ids.shape) != 2 or int(position_ids.shape[0]) != 1:
        return None
    pos = position_ids[0].tolist()
    if not pos or pos[0] != 0:
        return None
    starts = [i for i, p in enumerate(pos) if p == 0]
    return [e - s for s, e in zip(starts, [*starts[1:], len(pos)], strict=True)]


def _reading(bs: int, sl: int, lengths: list[int], tgt_len: int = 0, target_tokens: int = 0,
             tgt_lengths: list[int] | None = None, *, known: bool, assumed: str | None) -> ShapeReading:
    if known and not _fits(bs, sl, tgt_len, lengths, tgt_lengths):
        # A mask over another axis than seq_len's (channels-first speech features): its
        # lengths are not this shape's rows, so the rows count as full.
        assumed = (f"per-row lengths {lengths[:4]}{'...' if len(lengths) > 4 else ''} do not fit the "
                   f"shape ({bs}, {sl}) read from the input (a channels-first input?): every row counted as "
                   f"{sl} positions")
        lengths, tgt_lengths, known = [sl] * bs, None, False
        target_tokens = bs * tgt_len
    tokens = sum(lengths) + target_tokens
    shape = BatchShape(bs, sl, tgt_len, tokens, sum(n * n for n in lengths))
    return ShapeReading(shape, (lengths, tgt_lengths) if known else None, assumed)


def _fits(bs: int, sl: int, tgt_len: int, lengths: list[int], tgt_lengths: list[int] | None) -> bool:
    """Lengths that could be the rows of this shape, by ``read_schedule``'s sidecar rule."""
    if not lengths or min(lengths) < 0 or (tgt_lengths is not None and len(tgt_lengths) != len(lengths)):
        return False
    rows = RowLengths.from_lists([lengths], None if tgt_lengths is None else [tgt_lengths])
    return rows.mismatch(*(np.array([v], dtype=np.int64) for v in (bs, sl, tgt_len))) is None


def _from_mapping(batch: Mapping[str, object], encoder_decoder: bool) -> ShapeReading:
    tensors = {k: v for k, v in batch.items() if _is_tensor(v)}
    key = (next((k for k in INPUT_KEYS if k in tensors), None)
           or next((k for k, v in tensors.items() if len(v.shape) >= 2), None))
    if key is None:
        raise InputError(f"Cannot read a batch shape from a dict with keys {sorted(batch)}: none is a tensor "
                         f"named {', '.join(INPUT_KEYS)}; pass shape_fn=... returning "
                         "seqpoint.integrations.Shape(batch_size, seq_len, lengths=...).")
    bs, sl = _rows(tensors[key])
    mask = tensors.get("attention_mask")
    mask = mask if mask is not None and len(mask.shape) == 2 else None
    docs = _flattened_documents(batch.get("position_ids"))
    assumed = None
    if docs is not None and (len(docs) > 1 or mask is None):
        lengths, known = docs, True
    elif mask is not None:
        lengths, known = [int(v) for v in mask.sum(-1).tolist()], True
    else:
        lengths, known = [sl] * bs, False
        others = sorted(k for k in tensors if k != key)
        assumed = (f"took the shape from {key!r} {_dims(tensors[key])} and counted every row as {sl} real "
                   "positions: the batch has no attention_mask or position_ids"
                   + (f" (its other tensors {', '.join(map(repr, others))} were not read)" if others else ""))
    if key not in INPUT_KEYS and assumed is None:
        assumed = f"took the model input to be {key!r} {_dims(tensors[key])}, the first tensor with two dimensions"
    tgt_len = target_tokens = 0
    tgt_lengths: list[int] | None = None
    target = tensors.get("decoder_input_ids")
    if batch.get("decoder_input_ids") is None and encoder_decoder:
        target = tensors.get("labels")
    if target is not None and len(target.shape) >= 2:
        tgt_len = int(target.shape[1])
        # Padded label positions hold -100 (the loss' ignore index) in HF collators.
        labels = tensors.get("labels")
        if labels is not None and tuple(labels.shape) == tuple(target.shape):
            tgt_lengths = [int(v) for v in (labels != -100).sum(-1).tolist()]
            target_tokens = sum(tgt_lengths)
        else:
            target_tokens = int(target.shape[0]) * tgt_len
    if known and lengths is docs:
        tgt_lengths = None
    return _reading(bs, sl, lengths, tgt_len, target_tokens, tgt_lengths, known=known, assumed=assumed)


def read_batch(batch: object, *, encoder_decoder: bool = False) -> ShapeReading:
    """The shape of a batch, read from its tensors, with what had to be assumed (``assumed``, for a warning; ``lengths``
    None then); InputError, saying to pass a ``shape_fn``, without a tensor. ``batch`` is a tensor ``(batch, seq, ...)``
    (1-D: one sequence); a dict whose model input is the first of :data:`INPUT_KEYS` present (else its first 2-D
    tensor), with real lengths from ``attention_mask`` or, for padding-free packing, the documents where
    ``position_ids`` restart; or a list/tuple whose first element is the input. ``encoder_decoder`` reads ``labels`` as
    the decoder's target (real where not -100); ``decoder_input_ids`` always is."""
    if _is_tensor(batch):
        bs, sl = _rows(batch)
        return _reading(bs, sl, [sl] * bs, known=False, assumed=(
            f"took batch_size and seq_len from dimensions 0 and 1 of a tensor of shape {_dims(batch)} "
            f"and counted every row as {sl} real positions (a bare tensor has no attention_mask)"))
    if isinstance(batch, Mapping):
        return _from_mapping(batch, encoder_decoder)
    if isinstance(batch, Sequence) and not isinstance(batch, (str, bytes)) and batch:
        return read_batch(batch[0], encoder_decoder=encoder_decoder)
    raise InputError(f"Cannot read a batch shape from {type(batch).__name__}; pass shape_fn=... returning "
                     "seqpoint.integrations.Shape(batch_size, seq_len, lengths=...).")


def shape_from_fn(value: object) -> ShapeReading:
    """A user ``shape_fn``'s result (a :class:`Shape` or a trace row's five values) as a
    reading; InputError for anything else, saying what to return."""
    fix = ("shape_fn must return seqpoint.integrations.Shape(batch_size, seq_len, tgt_len=0, lengths=None, "
           "tgt_lengths=None), or the five ints (batch_size, seq_len, tgt_len, tokens, sum_sq_len)")
    if isinstance(value, Mapping):
        raise InputError(f"shape_fn returned a dict with keys {sorted(value)}: {fix} (Shape(**that_dict) "
                         "builds one from the same keys).")
    if isinstance(value, Shape):
        try:
            bs, sl, tl = int(value.batch_size), int(value.seq_len), int(value.tgt_len)
            lengths = None if value.lengths is None else [int(v) for v in value.lengths]
            tgt = None if value.tgt_lengths is None else [int(v) for v in value.tgt_lengths]
        except (TypeError, ValueError):
            raise InputError(f"shape_fn returned {value!r}, whose fields are not all ints: {fix}.") from None
        if bs < 1 or sl < 1 or tl < 0:
            raise InputError(f"shape_fn returned batch_size {bs}, seq_len {sl}, tgt_len {tl}: batch_size and "
                             "seq_len must be >= 1 and tgt_len >= 0.")
        if lengths is not None and not _fits(bs, sl, tl, lengths, tgt):
            raise InputError(f"shape_fn returned lengths {lengths[:8]} that do not fit batch_size {bs} and seq_len "
                             f"{sl}: give one length <= seq_len per row (or the documents of one packed row).")
        return _reading(bs, sl, [sl] * bs if lengths is None else lengths, tl,
                        sum(tgt) if tgt is not None else bs * tl, tgt, known=lengths is not None, assumed=None)
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and len(value) == 5:
        try:
            return ShapeReading(BatchShape(*(int(v) for v in value)), None, None)
        except (TypeError, ValueError):
            pass
    raise InputError(f"shape_fn returned {type(value).__name__} {str(value)[:80]}: {fix}.")


class ShapeReader:
    """Reads each batch's shape by the user's ``shape_fn`` or :func:`read_batch`, and says once,
    in an :class:`AssumedInputWarning` starting with ``who`` and ending with ``fix``, what the
    default reader had to assume."""

    def __init__(self, shape_fn: ShapeFn | None = None, *, encoder_decoder: bool = False, who: str,
                 fix: str = "pass shape_fn=lambda batch: seqpoint.integrations.Shape(batch_size, seq_len, "
                            "lengths=[...]) to record the real lengths (docs/user-workloads.md)") -> None:
        self.shape_fn, self.encoder_decoder, self.who, self.fix = shape_fn, encoder_decoder, who, fix
        self._warned = False

    def __call__(self, batch: object) -> ShapeReading:
        if self.shape_fn is not None:
            return shape_from_fn(self.shape_fn(batch))
        reading = read_batch(batch, encoder_decoder=self.encoder_decoder)
        if reading.assumed is not None and not self._warned:
            self._warned = True
            warnings.warn(f"{self.who} {reading.assumed}; {self.fix}.", AssumedInputWarning, stacklevel=3)
        return reading
