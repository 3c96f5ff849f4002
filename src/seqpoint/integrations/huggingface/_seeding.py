"""``SeededSampler``: make a single-process ``group_by_length`` order replayable in every epoch.

In a single process, ``LengthGroupedSampler`` (and a ``RandomSampler`` with
``use_seedable_sampler=False``) has no generator, so each epoch's order is drawn from the
global torch CPU generator when ``train()`` starts the epoch. By then the previous epoch
has drawn from that generator too: CPU dropout (a number of draws that depends on every
tensor's size), ``DataCollatorForLanguageModeling``'s masking and the DataLoader's worker
seed. A replay that does not run the model cannot know those draws, so only the first
epoch (and later ones when training draws nothing) can be exact.

This callback gives such a sampler its own generator at each epoch, seeded by
``(data_seed or seed) + epoch`` as accelerate's ``SeedableRandomSampler`` does, so the order
no longer depends on training's draws; :func:`schedule_from_trainer` sees the callback
and seeds its replay the same way, and every epoch is exact. Training's own randomness
(dropout, masking) is untouched: the global generator is not read or changed.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

__all__ = ["SeededSampler", "global_rng_samplers", "seed_samplers"]

#: Marks a sampler whose generator this module installed (so later epochs re-seed it).
_MARK = "_seqpoint_seeded"


def global_rng_samplers(loader: Any) -> list[Any]:
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


def epoch_seed(args: Any, epoch: int) -> int:
    """The seed of ``epoch``'s order: ``(data_seed or seed) + epoch``."""
    base = args.data_seed if getattr(args, "data_seed", None) is not None else args.seed
    return int(base) + int(epoch)


def seed_samplers(loader: Any, args: Any, epoch: int) -> int:
    """Give every global-RNG sampler of ``loader`` a generator seeded for ``epoch``; how many."""
    import torch

    samplers = global_rng_samplers(loader)
    for s in samplers:
        s.generator = torch.Generator().manual_seed(epoch_seed(args, epoch))
        setattr(s, _MARK, True)
    return len(samplers)


class SeededSampler(TrainerCallback):  # type: ignore[misc]
    """Seed a global-RNG train sampler per epoch, so :func:`schedule_from_trainer` is exact
    in every epoch. Add it before replaying: ``trainer.add_callback(SeededSampler())``.

    It changes which (equally random) order ``group_by_length`` draws in each epoch,
    nothing else; samplers that already have a generator (accelerate's seedable
    sampler, multi-process runs) are left alone.
    """

    def on_epoch_begin(self, args: Any, state: Any, control: Any, train_dataloader: Any = None,
                       **kwargs: Any) -> None:
        if train_dataloader is not None:
            # state.epoch is the whole number of epochs done when an epoch begins.
            seed_samplers(train_dataloader, args, round(state.epoch or 0.0))


def has_seeded_sampler(trainer: Any) -> bool:
    """True when ``trainer`` has a :class:`SeededSampler` among its callbacks."""
    handler = getattr(trainer, "callback_handler", None)
    return any(isinstance(cb, SeededSampler) for cb in getattr(handler, "callbacks", ()))
