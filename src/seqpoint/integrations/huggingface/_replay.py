"""``schedule_from_trainer``: the trainer's real train sampler over a one-column stand-in of the
dataset, prepared by accelerate and iterated as ``Trainer._run_epoch`` does; each micro-batch's
shape is what the trainer's collator makes of its rows (:mod:`._collate`). No model runs.

An unseeded sampler in one process draws each epoch's order from the global torch generator
after training drew from it (dropout, MLM masking), which no replay can know: ``SeededSampler``
gives it a generator seeded ``(data_seed or seed) + epoch`` each epoch, as the replay does."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from itertools import islice
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from seqpoint._rng import rngs_kept
from seqpoint.exceptions import InputError, SeqPointWarning
from seqpoint.integrations._recorder import row_lengths, schedule_of
from seqpoint.integrations._shapes import ShapeReading
from seqpoint.integrations.huggingface._collate import (
    Collation,
    Lengths,
    PaddingRule,
    check_trainer,
    known_rule,
    read_lengths,
    rule_holds,
)
from seqpoint.schedule import IterationSchedule

if TYPE_CHECKING:
    from torch.utils.data import DataLoader, Dataset
    from transformers import Trainer

__all__ = ["SeededSampler", "schedule_from_trainer"]

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
        # SeedableRandomSampler makes its own seeded generator at iteration.
        if (s is None or any(s is f for f in found) or not hasattr(s, "generator")
                or type(s).__name__ == "SeedableRandomSampler"):
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


#: One micro-batch of the replay: epoch, optimizer step, micro-batch within it, dataset indices.
MicroBatch = tuple[int, int, int, np.ndarray]


def _prepared_loader(trainer: Trainer, sampler_lengths: list[int], world_size: int,
                     rank: int) -> tuple[DataLoader[int], object]:
    import datasets
    import torch
    from accelerate.data_loader import prepare_data_loader
    from transformers.trainer_pt_utils import BatchRebalanceSampler

    args = trainer.args
    # A one-column stand-in: the sampler sees the same length and lengths as on the
    # real dataset (len(dataset) for random, the length column for group_by_length).
    stand_in = datasets.Dataset.from_dict({args.length_column_name: sampler_lengths})
    sampler = trainer._get_train_sampler(stand_in)
    # A list is a map-style dataset to torch: item i is the index i itself.
    indices = cast("Dataset[int]", list(range(len(sampler_lengths))))
    loader: DataLoader[int]
    if isinstance(sampler, BatchRebalanceSampler):
        sampler.dp_size, sampler.rank = world_size, rank
        loader = torch.utils.data.DataLoader(indices, batch_sampler=sampler, collate_fn=list)
    else:
        loader = torch.utils.data.DataLoader(indices, batch_size=trainer._train_batch_size, sampler=sampler,
                                             drop_last=args.dataloader_drop_last, collate_fn=list)
    acc = trainer.accelerator
    cfg = acc.dataloader_config
    prepared = prepare_data_loader(
        loader, None, num_processes=world_size, process_index=rank, split_batches=cfg.split_batches,
        put_on_device=False, rng_types=acc.rng_types.copy(), dispatch_batches=cfg.dispatch_batches,
        even_batches=cfg.even_batches, use_seedable_sampler=cfg.use_seedable_sampler, data_seed=cfg.data_seed)
    if isinstance(sampler, BatchRebalanceSampler):
        # As Trainer._get_dataloader: the sampler is rank-aware already.
        shard = getattr(prepared, "batch_sampler", None)
        if shard is not None and getattr(shard, "batch_sampler", None) is sampler:
            shard.num_processes, shard.process_index = 1, 0
    return prepared, sampler


@contextmanager
def _gradient_state_kept(trainer: Trainer) -> Iterator[None]:
    """Leave accelerate's process-wide gradient state as found (a prepared dataloader registers
    itself there while iterated, and the replay stops early)."""
    state = trainer.accelerator.gradient_state
    saved = list(state.dataloader_references)
    try:
        yield
    finally:
        state.dataloader_references = saved


def _micro_batches(
    trainer: Trainer, lengths: Lengths, world_size: int, rank: int,
    on_batch: Callable[[np.ndarray], ShapeReading] | None,
) -> tuple[list[MicroBatch], list[ShapeReading], str, bool]:
    """The micro-batches ``train()`` draws, in order; ``on_batch(indices)`` of each, run as the
    DataLoader collates it; the sampler's class name; whether later epochs use the global RNG."""
    args = trainer.args
    gas = int(args.gradient_accumulation_steps)
    prepared, sampler = _prepared_loader(trainer, lengths.sampler.tolist(), world_size, rank)
    len_dl = len(prepared)
    if len_dl == 0:
        raise InputError("The trainer's dataloader yields no batch: the dataset is smaller than one "
                         "batch and dataloader_drop_last is set.")
    per_epoch = max(len_dl // gas + int(len_dl % gas > 0), 1)
    if args.max_steps > 0:
        max_steps = int(args.max_steps)
        epochs = max_steps // per_epoch + int(max_steps % per_epoch > 0)
    else:
        max_steps = math.ceil(args.num_train_epochs * per_epoch)
        epochs = math.ceil(args.num_train_epochs)
    handler = getattr(trainer, "callback_handler", None)
    seeded = any(isinstance(cb, SeededSampler) for cb in getattr(handler, "callbacks", ()))
    global_order = epochs > 1 and not seeded and bool(global_rng_samplers(prepared))
    if global_order:
        warnings.warn(
            f"{type(sampler).__name__} draws each epoch's order from the global torch RNG after "
            "the previous epoch's training drew from it too (CPU dropout, random masking), which "
            "a replay cannot know: epoch 1 is exact, later epochs are exact only if the model "
            "draws nothing from the CPU generator. Add trainer.add_callback(SeededSampler()) "
            "before replaying to make every epoch exact.", SeqPointWarning, stacklevel=3)
    out: list[MicroBatch] = []
    results: list[ShapeReading] = []
    global_step = 0
    remainder = len_dl % gas or gas
    for epoch in range(epochs):
        if hasattr(prepared, "set_epoch"):
            prepared.set_epoch(epoch)
        inner: object = getattr(getattr(prepared, "batch_sampler", None), "batch_sampler", None)
        if hasattr(inner, "set_epoch"):
            inner.set_epoch(epoch)
        if seeded:
            seed_samplers(prepared, args, epoch)  # as SeededSampler.on_epoch_begin does
        it = iter(prepared)
        for update in range(per_epoch):
            take = gas if update != per_epoch - 1 else remainder
            group = list(islice(it, take))
            for micro, idx in enumerate(group):
                ids = np.asarray(idx, dtype=np.int64)
                out.append((epoch, global_step, micro, ids))
                if on_batch is not None:
                    results.append(on_batch(ids))
            if group:
                global_step += 1
            if global_step >= max_steps:
                break
        if global_step >= max_steps:
            break
    return out, results, type(sampler).__name__, global_order


def _by_rule(rule: PaddingRule, batches: list[MicroBatch], lengths: Lengths) -> list[ShapeReading]:
    source = lengths.source
    assert source is not None  # a rule is only tried with the source lengths read
    readings = []
    for *_, ids in batches:
        target = lengths.target[ids] if lengths.target is not None and rule.kind == "seq2seq" else None
        tgt = None if target is None else target.tolist()
        readings.append(ShapeReading(rule.row(source[ids], target), (source[ids].tolist(), tgt), None))
    return readings


def schedule_from_trainer(trainer: Trainer, *, world_size: int | None = None,
                          rank: int | None = None) -> IterationSchedule:
    """The micro-batches ``trainer.train()`` will feed the model, without running it: one row per micro-batch, in
    ``train()`` order, with its real per-sample lengths in ``rows``. ``meta["optimizer_step"]`` and
    ``meta["micro_batch"]`` place each row, ``meta["collator"]`` names the collator and ``meta["shapes"]`` says how its
    shapes were read (``collator`` or ``padding rule``: transformers' own collators' rule, checked on 16 micro-batches).
    The trainer has a map-style ``train_dataset`` (with a ``length`` or model-input column when ``group_by_length``
    sorts by it); ``world_size`` and ``rank`` default to its own. The global RNGs are left as found. InputError for an
    ``IterableDataset``, a length-grouping sampler without lengths (record the run with :class:`SeqPointCallback`
    instead), or a failing collator."""
    check_trainer(trainer)
    encoder_decoder = bool(getattr(getattr(trainer.model, "config", None), "is_encoder_decoder", False))
    rule = known_rule(trainer.data_collator, encoder_decoder=encoder_decoder)
    lengths = read_lengths(trainer, with_target=rule is not None and rule.kind == "seq2seq")
    ws = int(world_size if world_size is not None else trainer.accelerator.num_processes)
    rk = int(rank if rank is not None else trainer.accelerator.process_index)
    if not 0 <= rk < ws:
        raise InputError(f"rank must be in [0, {ws}); got {rk}.")
    collation = Collation(trainer)
    # Collated in the DataLoader's worker processes, the collator draws nothing from this one's RNG.
    isolated = rngs_kept if trainer.args.dataloader_num_workers > 0 else nullcontext
    how = "collator"
    with rngs_kept(), _gradient_state_kept(trainer):
        if rule is not None and lengths.source is not None:
            with rngs_kept():  # a pass that does not collate draws less than train(): not the one kept
                batches, _, sampler, global_order = _micro_batches(trainer, lengths, ws, rk, None)
                differs = rule_holds(collation, rule, [b[3] for b in batches], lengths.source, lengths.target)
            if differs is not None:
                warnings.warn(
                    f"The padding rule of {collation.name} differs from what the collator returns for micro-batch "
                    f"{differs}; every micro-batch is collated instead (exact, about 5 ms each). Please report this.",
                    SeqPointWarning, stacklevel=2)
            elif not global_order:  # later epochs' orders follow the collator's draws (MLM masking)
                readings, how = _by_rule(rule, batches, lengths), "padding rule"
        if how == "collator":
            def read(ids: np.ndarray) -> ShapeReading:
                with isolated():
                    return collation.read(ids)

            batches, readings, sampler, _ = _micro_batches(trainer, lengths, ws, rk, read)
    return _schedule(batches, readings, trainer, ws, rk, sampler, collation.name, how)


def _schedule(batches: list[MicroBatch], readings: list[ShapeReading], trainer: Trainer, ws: int, rk: int,
              sampler: str, collator: str, how: str) -> IterationSchedule:
    rows = row_lengths([r.lengths for r in readings])  # None: the collator's output does not say (warned)
    shapes = [r.shape for r in readings]
    meta = {"source": "huggingface", "sampler": sampler, "collator": collator, "shapes": how,
            "gradient_accumulation_steps": int(trainer.args.gradient_accumulation_steps), "world_size": ws,
            "rank": rk, "optimizer_step": [b[1] for b in batches], "micro_batch": [b[2] for b in batches],
            "packed": rows is not None and rows.flattened(np.array([s.batch_size for s in shapes]))}
    return schedule_of([b[0] for b in batches], shapes, meta, rows)
