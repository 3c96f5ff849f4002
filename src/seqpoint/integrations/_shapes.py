"""Reading the shape that fixes a batch's cost from the batch itself (tensors, dicts, lists).

Duck-typed: anything with ``shape`` and ``tolist`` (torch tensors, numpy arrays) is a
tensor here, so this module imports neither torch nor numpy-specific code paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from seqpoint.exceptions import InputError

__all__ = ["INPUT_KEYS", "BatchShape", "batch_shape", "sequence_lengths"]

#: Keys of the model input in a dict batch, tried in order (text, then speech, then embeddings).
INPUT_KEYS: tuple[str, ...] = ("input_ids", "input_values", "input_features", "inputs_embeds", "x", "src")


class BatchShape(NamedTuple):
    """The cost-fixing shape of one (micro-)batch, as a run-trace row stores it."""

    batch_size: int
    seq_len: int
    tgt_len: int
    tokens: int
    sum_sq_len: int


def _is_tensor(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "tolist") and len(getattr(x, "shape", ())) >= 1


def _rows(t: Any) -> tuple[int, int]:
    shape = tuple(int(d) for d in t.shape)
    if len(shape) == 1:  # one unbatched sequence
        return 1, shape[0]
    return shape[0], shape[1]


def _flattened_documents(position_ids: Any) -> list[int] | None:
    """Document lengths of a padding-free packed row (position ids restart at 0 per document)."""
    if not _is_tensor(position_ids) or len(position_ids.shape) != 2 or int(position_ids.shape[0]) != 1:
        return None
    pos = position_ids[0].tolist()
    starts = [i for i, p in enumerate(pos) if p == 0]
    if len(starts) <= 1:
        return None
    ends = [*starts[1:], len(pos)]
    return [e - s for s, e in zip(starts, ends, strict=True)]


def _from_mapping(batch: Mapping[str, Any], encoder_decoder: bool) -> BatchShape:
    key = next((k for k in INPUT_KEYS if _is_tensor(batch.get(k))), None)
    if key is None:
        key = next((k for k, v in batch.items() if _is_tensor(v) and len(v.shape) >= 2), None)
    if key is None:
        raise InputError(
            f"Cannot read a batch shape from a dict with keys {sorted(batch)}: none is a tensor "
            f"named {', '.join(INPUT_KEYS)}; pass shape_fn=... returning "
            "(batch_size, seq_len, tgt_len, tokens, sum_sq_len)."
        )
    bs, sl = _rows(batch[key])
    mask: Any = batch.get("attention_mask")
    docs = _flattened_documents(batch.get("position_ids"))
    if docs is not None:
        lengths = docs
    elif _is_tensor(mask) and len(mask.shape) == 2 and tuple(mask.shape[:2]) == (bs, sl):
        lengths = [int(v) for v in mask.sum(-1).tolist()]
    else:
        lengths = [sl] * bs
    tokens = sum(lengths)
    sum_sq = sum(n * n for n in lengths)
    tgt_len = 0
    target: Any = batch.get("decoder_input_ids")
    if target is None and encoder_decoder:
        target = batch.get("labels")
    if _is_tensor(target) and len(target.shape) >= 2:
        tgt_len = int(target.shape[1])
        # Padded label positions hold -100 (the loss' ignore index) in HF collators.
        labels: Any = batch.get("labels")
        if _is_tensor(labels) and tuple(labels.shape) == tuple(target.shape):
            tokens += int((labels != -100).sum())
        else:
            tokens += int(target.shape[0]) * tgt_len
    return BatchShape(bs, sl, tgt_len, tokens, sum_sq)


def batch_shape(batch: Any, *, encoder_decoder: bool = False) -> BatchShape:
    """The shape of a batch, read from its tensors.

    Parameters
    ----------
    batch : tensor, dict of tensors, or list/tuple
        A tensor of shape ``(batch, seq, ...)`` (1-D: one sequence); a dict whose model
        input is the first of :data:`INPUT_KEYS` present (else its first tensor with two
        dimensions), with real per-row lengths from ``attention_mask`` or, for
        padding-free packing, the documents where ``position_ids`` restart at 0; or a
        list/tuple whose first element is the input (e.g. ``(inputs, targets)``).
    encoder_decoder : bool, default False
        Read ``labels`` as the decoder's target (``tgt_len``); ``decoder_input_ids`` is
        always read as the target.

    Returns
    -------
    BatchShape

    Raises
    ------
    InputError
        When no tensor is found; the message says to pass a ``shape_fn``.
    """
    if _is_tensor(batch):
        bs, sl = _rows(batch)
        return BatchShape(bs, sl, 0, bs * sl, bs * sl * sl)
    if isinstance(batch, Mapping):
        return _from_mapping(batch, encoder_decoder)
    if isinstance(batch, Sequence) and not isinstance(batch, (str, bytes)) and batch:
        return batch_shape(batch[0], encoder_decoder=encoder_decoder)
    raise InputError(
        f"Cannot read a batch shape from {type(batch).__name__}; pass shape_fn=... returning "
        "(batch_size, seq_len, tgt_len, tokens, sum_sq_len)."
    )


def sequence_lengths(
    batch: Any, *, encoder_decoder: bool = False, shape: BatchShape | None = None
) -> tuple[list[int], list[int] | None] | None:
    """Each sequence's real ``(lengths, tgt_lengths)`` in a dict batch, or None when the
    batch does not say (no ``attention_mask`` or restarting ``position_ids``).

    Lengths come from the attention mask's row sums or, for padding-free packing, the
    documents where ``position_ids`` restart at 0; target lengths from the ``labels``
    that are not -100 (encoder-decoder models, or with ``decoder_input_ids``). With
    ``shape`` (the batch's :func:`batch_shape`), lengths that do not fit it are None: a
    mask over another axis than the one the shape's ``seq_len`` was read from (speech
    features stored channels-first) would otherwise be recorded as rows longer than
    their batch, which ``read_schedule`` refuses.
    """
    found = _sequence_lengths(batch, encoder_decoder)
    if found is None or shape is None:
        return found
    import numpy as np

    from seqpoint.schedule import RowLengths

    rows = RowLengths.from_lists([found[0]], None if found[1] is None else [found[1]])
    batch_size, seq_len, tgt_len = (np.array([v], dtype=np.int64) for v in shape[:3])
    return found if rows.mismatch(batch_size, seq_len, tgt_len) is None else None


def _sequence_lengths(batch: Any, encoder_decoder: bool) -> tuple[list[int], list[int] | None] | None:
    if not isinstance(batch, Mapping):
        return None
    docs = _flattened_documents(batch.get("position_ids"))
    mask: Any = batch.get("attention_mask")
    if docs is not None:
        return docs, None
    if not (_is_tensor(mask) and len(mask.shape) == 2):
        return None
    lengths = [int(v) for v in mask.sum(-1).tolist()]
    labels: Any = batch.get("labels")
    has_target = encoder_decoder or _is_tensor(batch.get("decoder_input_ids"))
    if has_target and _is_tensor(labels) and len(labels.shape) == 2 and int(labels.shape[0]) == len(lengths):
        return lengths, [int(v) for v in (labels != -100).sum(-1).tolist()]
    return lengths, None
