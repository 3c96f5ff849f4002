"""Replay of a user's own PyTorch batch sampler (indices only)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from seqpoint._params import Constraint, check_params
from seqpoint.batching._base import BatchPlan, as_lengths
from seqpoint.batching._limits import EPOCHS, LENGTH
from seqpoint.exceptions import InputError
from seqpoint.schedule import IterationSchedule
from seqpoint.traces import Lengths

__all__ = ["from_batch_sampler"]

_SAMPLER_CONSTRAINTS: dict[str, list[Constraint]] = {
    "epochs": [EPOCHS],
    "pad_to_multiple_of": [LENGTH],
}


def _set_epoch(batch_sampler: Any, epoch: int) -> None:
    """Call ``set_epoch`` where the sampler (or the sampler it wraps) has one."""
    for obj in (batch_sampler, getattr(batch_sampler, "sampler", None)):
        fn = getattr(obj, "set_epoch", None)
        if callable(fn):
            fn(epoch)


def from_batch_sampler(
    batch_sampler: Iterable[Any],
    lengths: Lengths | ArrayLike,
    *,
    epochs: int = 1,
    pad_to_multiple_of: int = 1,
    set_epoch: bool = True,
) -> IterationSchedule:
    """Build the schedule by iterating a real batch sampler over sample indices.

    Parameters
    ----------
    batch_sampler : iterable of sequences of int
        Anything that yields batches of dataset indices once per ``iter()``: a
        ``torch.utils.data.BatchSampler``, a ``DistributedSampler``-backed sampler, a
        lhotse-style sampler of indices, or a plain list of lists. torch is not needed.
    lengths : Lengths or array-like of shape (n_samples,)
        Length of every index the sampler can yield.
    epochs : int
        Times the sampler is iterated; ``set_epoch(e)`` is called first on the sampler and
        on its ``.sampler`` where they have one (so ``DistributedSampler`` reshuffles).
    pad_to_multiple_of : int
        Padded lengths are rounded up to a multiple of this.
    set_epoch : bool
        Call ``set_epoch`` before each epoch.

    Returns
    -------
    IterationSchedule
        One row per yielded batch; ``meta["policy"] == "batch_sampler"``.
    """
    lens = as_lengths(lengths)
    check_params("", _SAMPLER_CONSTRAINTS, {"epochs": epochs, "pad_to_multiple_of": pad_to_multiple_of})
    n = lens.n_samples
    orders, sizes, ep, unseen = [], [], [], []
    for e in range(epochs):
        if set_epoch:
            _set_epoch(batch_sampler, e)
        batches = [b.tolist() if hasattr(b, "tolist") else list(b) for b in iter(batch_sampler)]
        size = np.fromiter((len(b) for b in batches), dtype=np.int64, count=len(batches))
        if size.shape[0] and size.min() == 0:
            raise InputError(
                f"The batch sampler yielded an empty batch (epoch {e}, batch "
                f"{int(np.argmin(size))}); every batch needs at least one index."
            )
        order = np.fromiter(itertools.chain.from_iterable(batches), dtype=np.int64, count=int(size.sum()))
        if order.shape[0] and (order.min() < 0 or order.max() >= n):
            pos = int(np.flatnonzero((order < 0) | (order >= n))[0])
            batch = int(np.searchsorted(np.cumsum(size), pos, side="right"))
            raise InputError(
                f"The batch sampler yielded index {int(order[pos])} (epoch {e}, batch {batch}) but "
                f"the lengths cover {n} samples (0..{n - 1}); give the lengths of the sampler's dataset."
            )
        orders.append(order)
        sizes.append(size)
        ep.append(e)
        unseen.append(n - int(np.unique(order).shape[0]))
    plan = BatchPlan.concat(list(zip(orders, sizes, ep, strict=False)), unseen)
    if plan.n_batches == 0:
        raise InputError("The batch sampler yielded no batch; check its dataset and batch size.")
    return plan.to_schedule(
        lens, pad_to_multiple_of=pad_to_multiple_of, policy="batch_sampler",
        params={"sampler": type(batch_sampler).__name__}, epochs=epochs, seed=None,
    )
