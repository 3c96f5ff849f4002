"""fairseq's ``max_tokens`` batching (``data_utils.batch_by_size``) as the ``token_budget`` policy."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from seqpoint._params import Boolean, Constraint
from seqpoint._signature import IntArray
from seqpoint.batching._base import POLICIES, BatchingPolicy, BatchPlan, permute_batches
from seqpoint.batching._limits import BATCH_SIZE, LENGTH, TOKENS
from seqpoint.batching._search import chase, largest_fitting
from seqpoint.exceptions import AdjustedInputWarning, ConfigError, InputError
from seqpoint.traces import Lengths

__all__ = ["TokenBudgetPolicy", "batch_by_size"]


def batch_by_size(num_tokens: IntArray, *, max_tokens: int | None, max_sentences: int | None = None,
                  required_batch_size_multiple: int = 1) -> IntArray:
    """Consecutive batch sizes (summing to ``n``) that fairseq's ``batch_by_size`` gives for
    samples of sizes ``num_tokens`` (fairseq: ``max(src, tgt)``) in this order: each the longest
    run with ``count * max(num_tokens) <= max_tokens`` and ``count <= max_sentences`` (at least
    one budget given), trimmed to a multiple of ``required_batch_size_multiple`` when larger."""
    n = num_tokens.shape[0]
    left = n - np.arange(n, dtype=np.int64)
    if max_sentences is not None:
        left = np.minimum(left, max_sentences)
    fit = left if max_tokens is None else largest_fitting(num_tokens, left, max_tokens, extra=0)
    mult = required_batch_size_multiple
    if mult > 1:
        fit = np.where(fit > mult, fit - fit % mult, fit)
    assert np.all(fit >= 1), "every sample must fit the budget on its own"
    starts = chase(fit)
    return fit[starts]


@POLICIES.register("token_budget")
@dataclass(frozen=True, kw_only=True)
class TokenBudgetPolicy(BatchingPolicy):
    """fairseq ``--max-tokens`` batching, index for index (numpy's legacy streams, as fairseq):
    ``ordered_indices`` (a permutation under ``numpy_seed(seed)``, stable-sorted by target then source length),
    ``batch_by_size`` with ``num_tokens = max(src, tgt)``, and every epoch ``e`` ``shuffle_batches`` under
    ``numpy_seed(seed + e + 1)``: the batches are fixed for the run, only their order changes."""

    name: ClassVar[str] = "token_budget"

    max_tokens: int | None = 4096
    """Most padded tokens per batch, ``batch_size * max(num_tokens)`` (fairseq ``--max-tokens``)."""
    batch_size: int | None = None
    """Most samples per batch (fairseq ``--batch-size``/``--max-sentences``); None = no cap."""
    required_batch_size_multiple: int = 1
    """Batch sizes above this are trimmed to a multiple of it (fairseq, default 8 there)."""
    shuffle: bool = True
    """Random tie order before sorting and shuffled batch order every epoch."""
    drop_long: bool = False
    """Drop samples longer than ``max_tokens`` with a warning instead of failing
    (fairseq ``--skip-invalid-size-inputs-valid-test``)."""
    pad_to_multiple_of: int = 1
    """Padded lengths are rounded up to a multiple of this (batching uses raw lengths, as fairseq)."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "max_tokens": [TOKENS, None], "batch_size": [BATCH_SIZE, None], "required_batch_size_multiple": [BATCH_SIZE],
        "shuffle": [Boolean()], "drop_long": [Boolean()], "pad_to_multiple_of": [LENGTH]}

    def _check(self) -> None:
        if self.max_tokens is None and self.batch_size is None:
            raise ConfigError("TokenBudgetPolicy needs 'max_tokens' and/or 'batch_size'.")

    def ordered_indices(self, lengths: Lengths, seed: int) -> IntArray:
        """fairseq ``LanguagePairDataset.ordered_indices`` under ``numpy_seed(seed)``."""
        n = lengths.n_samples
        indices = (np.random.RandomState(seed).permutation(n).astype(np.int64) if self.shuffle
                   else np.arange(n, dtype=np.int64))
        if lengths.tgt is not None:
            indices = indices[np.argsort(lengths.tgt[indices], kind="mergesort")]
        return indices[np.argsort(lengths.src[indices], kind="mergesort")]

    def plan(self, lengths: Lengths, *, epochs: int = 1, seed: int = 0) -> BatchPlan:
        ntok = lengths.num_tokens()
        indices = self.ordered_indices(lengths, seed)
        dropped = 0
        if self.max_tokens is not None:
            long = ntok[indices] > self.max_tokens
            if long.any():
                worst = int(np.argmax(ntok))
                if not self.drop_long:
                    raise InputError(f"Sample {worst} of {lengths.source} has {int(ntok[worst])} tokens (max "
                                     f"of source and target), more than max_tokens={self.max_tokens}; raise "
                                     f"max_tokens to at least {int(ntok[worst])} or drop such samples with "
                                     "drop_long=True (CLI: --set batching.params.drop_long=true).")
                dropped = int(long.sum())
                warnings.warn(f"Dropped {dropped} sample(s) of {lengths.source} longer than "
                              f"max_tokens={self.max_tokens} (the longest: sample {worst}, "
                              f"{int(ntok[worst])} tokens).", AdjustedInputWarning, stacklevel=4)
                indices = indices[~long]
        if indices.shape[0] == 0:
            return BatchPlan.concat([], [dropped] * epochs)
        sizes = batch_by_size(ntok[indices], max_tokens=self.max_tokens, max_sentences=self.batch_size,
                              required_batch_size_multiple=self.required_batch_size_multiple)

        def cut(e: int) -> tuple[IntArray, IntArray, int]:
            if not self.shuffle:
                return indices, sizes, dropped
            perm = np.random.RandomState(seed + e + 1).permutation(sizes.shape[0])
            return (*permute_batches(indices, sizes, perm), dropped)

        return BatchPlan.per_epoch(epochs, cut)
