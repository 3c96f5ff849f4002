"""Hugging Face ``group_by_length`` (``LengthGroupedSampler``) megabatch grouping."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from seqpoint._params import Boolean, Constraint, Options
from seqpoint._signature import IntArray
from seqpoint.batching._base import POLICIES, ConsecutivePolicy, epoch_rng, epoch_seed
from seqpoint.batching._limits import BATCH_SIZE, LENGTH, MAX_BATCH_SIZE, bounded
from seqpoint.exceptions import ConfigError
from seqpoint.traces import Lengths

__all__ = ["GroupByLengthPolicy", "length_grouped_indices"]


def length_grouped_indices(lengths: IntArray, perm: IntArray, batch_size: int, mega_batch_mult: int | None = None
                           ) -> IntArray:
    """``transformers.trainer_pt_utils.get_length_grouped_indices`` given its permutation:
    megabatches sorted by decreasing length (stable), the longest head swapped to position 0."""
    n = lengths.shape[0]
    if mega_batch_mult is None:
        mega_batch_mult = min(n // (batch_size * 4), 50) or 1
    size = mega_batch_mult * batch_size
    perm = np.asarray(perm, dtype=np.int64)
    neg = -lengths[perm]
    order = np.empty(n, dtype=np.int64)
    full = (n // size) * size
    if full:
        # Full megabatches as rows of a matrix: one vectorised stable sort per row.
        rows = np.argsort(neg[:full].reshape(-1, size), axis=1, kind="stable")
        rows += np.arange(0, full, size, dtype=np.int64)[:, None]
        order[:full] = perm[rows.ravel()]
    if full < n:
        order[full:] = perm[full + np.argsort(neg[full:], kind="stable")]
    heads = np.arange(0, n, size)
    # torch.argmax returns the first maximum, as np.argmax does.
    best = int(heads[int(np.argmax(lengths[order[heads]]))])
    order[0], order[best] = order[best], order[0]
    return order


@POLICIES.register("group_by_length")
@dataclass(frozen=True, kw_only=True)
class GroupByLengthPolicy(ConsecutivePolicy):
    """Hugging Face Trainer ``group_by_length=True`` (``LengthGroupedSampler``): every epoch a random
    permutation, megabatches of ``mega_batch_mult * batch_size`` sorted by decreasing length, the longest sample
    first, cut into batches. With ``generator="torch"`` the permutation is ``torch.randperm`` seeded with
    63 bits of the epoch's stream (:func:`epoch_seed`), index for index what transformers gives with that seed."""

    name: ClassVar[str] = "group_by_length"

    batch_size: int = 32
    """Samples per batch (the Trainer's per-device batch size x gradient accumulation)."""
    mega_batch_mult: int | None = None
    """Megabatch size in batches; None = ``min(n // (4 * batch_size), 50)``, at least 1 (HF default)."""
    generator: str = "numpy"
    """Source of the per-epoch permutation: 'numpy' or 'torch' (bit-exact with transformers)."""
    drop_last: bool = False
    """Drop the final partial batch of every epoch (``dataloader_drop_last``)."""
    pad_to_multiple_of: int = 1
    """Padded lengths are rounded up to a multiple of this (``DataCollatorWithPadding``)."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "batch_size": [BATCH_SIZE], "mega_batch_mult": [bounded(int, 1, MAX_BATCH_SIZE), None],
        "generator": [Options(("numpy", "torch"))], "drop_last": [Boolean()], "pad_to_multiple_of": [LENGTH]}

    def permutation(self, n: int, seed: int, epoch: int) -> IntArray:
        """The epoch's random permutation of ``range(n)``."""
        if self.generator == "torch":
            try:
                import torch
            except ImportError:
                raise ConfigError("generator='torch' needs torch installed; use generator='numpy'.") from None
            g = torch.Generator()
            g.manual_seed(epoch_seed(seed, epoch))
            return torch.randperm(n, generator=g).numpy().astype(np.int64)
        return epoch_rng(seed, epoch).permutation(n).astype(np.int64)

    def epoch_order(self, lengths: Lengths, seed: int, epoch: int) -> IntArray:
        perm = self.permutation(lengths.n_samples, seed, epoch)
        return length_grouped_indices(lengths.src, perm, self.batch_size, self.mega_batch_mult)
