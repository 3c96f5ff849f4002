"""``SeededSampler``: make a single-process ``group_by_length`` order replayable in every epoch.

In one process ``LengthGroupedSampler`` (and a ``RandomSampler`` without a seedable
sampler) draws each epoch's order from the global torch generator after the previous
epoch's training drew from it (dropout, MLM masking), which no replay can know. The
callback gives such a sampler its own generator each epoch, seeded ``(data_seed or seed)
+ epoch`` as accelerate does; :func:`schedule_from_trainer` seeds its replay the same way.
Training's own randomness is untouched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

if TYPE_CHECKING:
    from torch.utils.data import DataLoader
    from transformers import Trainer

__all__ = ["SeededSampler", "global_rng_samplers", "seed_samplers"]

#: Marks a sampler whose generator this module installed (so later epochs re-seed it).
_MARK = "_seqpoint_seeded"


def global_rng_samplers(loader: DataLoader[Any]) -> list[Any]:
    """Samplers under ``loader`` that draw each epoch's order from the global torch RNG
    (no generator of their own), or whose generator :func:`seed_samplers` installed."""
    shard = getattr(loader, "batch_sampler", None)
    candidates = [getattr(loader, "sampler", None), getattr(shard, "sampler", None),
                  getattr(getattr(shard, "batch_sampler", None), "sampler", None)]
    found: list[Any] = []
    for s in candidates:
        if s is None or any(s is f for f in found) or not hasattr(s, "generator"):
            continue
        # SeedableRandomSampler makes its own seeded generator at iteration.
        if type(s).__name__ == "SeedableRandomSampler":
            continue
        if s.generator is None or getattr(s, _MARK, False):
            found.append(s)
    return found


def seed_samplers(loader: DataLoader[Any], args: TrainingArguments, epoch: int) -> None:
    """Give every global-RNG sampler of ``loader`` a generator seeded ``(data_seed or seed) + epoch``."""
    import torch

    data_seed = getattr(args, "data_seed", None)
    seed = int(args.seed if data_seed is None else data_seed) + int(epoch)
    for s in global_rng_samplers(loader):
        s.generator = torch.Generator().manual_seed(seed)
        setattr(s, _MARK, True)


class SeededSampler(TrainerCallback):  # type: ignore[misc]
    """Seed a global-RNG train sampler per epoch, so :func:`schedule_from_trainer` is exact in
    every epoch: ``trainer.add_callback(SeededSampler())`` before replaying. Samplers with a
    generator of their own are left alone."""

    def on_epoch_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                       train_dataloader: DataLoader[Any] | None = None, **kwargs: object) -> None:
        if train_dataloader is not None:
            # state.epoch is the whole number of epochs done when an epoch begins.
            seed_samplers(train_dataloader, args, round(state.epoch or 0.0))


def has_seeded_sampler(trainer: Trainer) -> bool:
    """True when ``trainer`` has a :class:`SeededSampler` among its callbacks."""
    handler = getattr(trainer, "callback_handler", None)
    return any(isinstance(cb, SeededSampler) for cb in getattr(handler, "callbacks", ()))
