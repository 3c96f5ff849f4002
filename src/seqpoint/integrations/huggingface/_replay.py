"""``schedule_from_trainer``: replay a Trainer's own sampler and dataloader over lengths.

The replay builds the trainer's real train sampler (``trainer._get_train_sampler``, so
``train_sampling_strategy``/``group_by_length``, seed and ``data_seed`` are the trainer's)
over a one-column stand-in of the dataset, wraps it in a DataLoader with the trainer's
batch size and ``dataloader_drop_last``, prepares it with accelerate's own
``prepare_data_loader`` (seedable sampler, ``BatchSamplerShard`` for world size/rank) and
iterates it epoch by epoch exactly as ``Trainer._run_epoch`` does (``set_epoch``,
chunks of ``gradient_accumulation_steps`` micro-batches, ``max_steps``). Only indices
travel; the collator's padding is applied to their lengths.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from typing import Any

import numpy as np

from seqpoint.exceptions import InputError, SeqPointWarning
from seqpoint.integrations.huggingface._lengths import padding_rule, read_lengths
from seqpoint.integrations.huggingface._seeding import (
    global_rng_samplers,
    has_seeded_sampler,
    seed_samplers,
)
from seqpoint.schedule import IterationSchedule, RowLengths

__all__ = ["schedule_from_trainer"]


@contextmanager
def _torch_rng_kept() -> Iterator[None]:
    """Leave the global torch RNG as found: samplers without a generator draw from it."""
    import torch

    state = torch.random.get_rng_state()
    try:
        yield
    finally:
        torch.random.set_rng_state(state)


def _prepared_loader(trainer: Any, sampler_lengths: list[int], world_size: int, rank: int) -> Any:
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
    indices: Any = list(range(len(sampler_lengths)))
    loader: Any
    if isinstance(sampler, BatchRebalanceSampler):
        sampler.dp_size, sampler.rank = world_size, rank
        loader = torch.utils.data.DataLoader(indices, batch_sampler=sampler, collate_fn=list)
    else:
        loader = torch.utils.data.DataLoader(
            indices,
            batch_size=trainer._train_batch_size,
            sampler=sampler,
            drop_last=args.dataloader_drop_last,
            collate_fn=list,
        )
    acc = trainer.accelerator
    cfg = acc.dataloader_config
    prepared = prepare_data_loader(
        loader,
        None,
        num_processes=world_size,
        process_index=rank,
        split_batches=cfg.split_batches,
        put_on_device=False,
        rng_types=acc.rng_types.copy(),
        dispatch_batches=cfg.dispatch_batches,
        even_batches=cfg.even_batches,
        use_seedable_sampler=cfg.use_seedable_sampler,
        data_seed=cfg.data_seed,
    )
    if isinstance(sampler, BatchRebalanceSampler):
        # As Trainer._get_dataloader: the sampler is rank-aware already.
        shard = getattr(prepared, "batch_sampler", None)
        if shard is not None and getattr(shard, "batch_sampler", None) is sampler:
            shard.num_processes, shard.process_index = 1, 0
    return prepared, sampler


def schedule_from_trainer(
    trainer: Any, *, world_size: int | None = None, rank: int | None = None
) -> IterationSchedule:
    """The micro-batches ``trainer.train()`` will feed the model, without running it.

    Parameters
    ----------
    trainer : transformers.Trainer
        A trainer with a map-style ``train_dataset`` holding an ``input_ids`` (the
        processing class' first model input) or ``length`` column.
    world_size, rank : int, optional
        Data-parallel size and rank to replay; default the trainer's own.

    Returns
    -------
    IterationSchedule
        One row per micro-batch, in ``train()`` order. ``meta["optimizer_step"]`` and
        ``meta["micro_batch"]`` say which optimizer step each row belongs to.

    Raises
    ------
    InputError
        For an ``IterableDataset`` or a dataset without lengths; the message says to
        record the run with :class:`SeqPointCallback` instead.

    Notes
    -----
    The global torch RNG is left as found, so calling this right before
    ``trainer.train()`` does not change the run. The replay consumes the global RNG as
    ``train()`` does (the DataLoader's seed draw, then the sampler's permutation, epoch
    after epoch). In a single process a sampler without a generator of its own
    (``group_by_length``, or a random sampler with ``use_seedable_sampler=False``) draws
    epoch ``e``'s order *after* training's own draws of epoch ``e - 1`` (CPU dropout,
    random masking), which no replay can know without running the model: every epoch
    is exact when training draws nothing from the CPU generator, else epoch 1 only, and
    a ``SeqPointWarning`` says so. With :class:`SeededSampler` among the trainer's
    callbacks (``trainer.add_callback(SeededSampler())``) the sampler's order is seeded
    per epoch in both the run and the replay, and every epoch is exact.

    ``schedule.rows`` holds every micro-batch's real per-sample lengths (the documents
    of a packed row with the flattening collator), for ``workload_from_trainer``.
    """
    lengths = read_lengths(trainer)  # checks first that it was given a Trainer
    args = trainer.args
    rule = padding_rule(trainer.data_collator)
    ws = int(world_size if world_size is not None else trainer.accelerator.num_processes)
    rk = int(rank if rank is not None else trainer.accelerator.process_index)
    if not 0 <= rk < ws:
        raise InputError(f"rank must be in [0, {ws}); got {rk}.")
    gas = int(args.gradient_accumulation_steps)
    rows: list[tuple[int, int, int, int, int, int, int, int]] = []
    per_row: list[Any] = []
    per_row_tgt: list[Any] = []
    with _torch_rng_kept():
        prepared, sampler = _prepared_loader(trainer, lengths.sampler.tolist(), ws, rk)
        len_dl = len(prepared)
        if len_dl == 0:
            raise InputError(
                "The trainer's dataloader yields no batch: the dataset is smaller than one "
                "batch and dataloader_drop_last is set."
            )
        per_epoch = max(len_dl // gas + int(len_dl % gas > 0), 1)
        if args.max_steps > 0:
            max_steps = int(args.max_steps)
            epochs = max_steps // per_epoch + int(max_steps % per_epoch > 0)
        else:
            max_steps = math.ceil(args.num_train_epochs * per_epoch)
            epochs = math.ceil(args.num_train_epochs)
        seeded = has_seeded_sampler(trainer)
        if epochs > 1 and not seeded and global_rng_samplers(prepared):
            warnings.warn(
                f"{type(sampler).__name__} draws each epoch's order from the global torch RNG after "
                "the previous epoch's training drew from it too (CPU dropout, random masking), which "
                "a replay cannot know: epoch 1 is exact, later epochs are exact only if training "
                "draws nothing from the CPU generator. Add trainer.add_callback(SeededSampler()) "
                "before replaying to make every epoch exact.",
                SeqPointWarning,
                stacklevel=2,
            )
        global_step = 0
        remainder = len_dl % gas or gas
        for epoch in range(epochs):
            if hasattr(prepared, "set_epoch"):
                prepared.set_epoch(epoch)
            inner: Any = getattr(getattr(prepared, "batch_sampler", None), "batch_sampler", None)
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
                    target = lengths.target[ids] if lengths.target is not None else None
                    rows.append((epoch, global_step, micro, *rule.row(lengths.source[ids], target)))
                    per_row.append(lengths.source[ids])
                    per_row_tgt.append(target)
                if group:
                    global_step += 1
                if global_step >= max_steps:
                    break
            if global_step >= max_steps:
                break
    data = np.array(rows, dtype=np.int64)
    meta = {
        "source": "huggingface",
        "sampler": type(sampler).__name__,
        "collator": type(trainer.data_collator).__name__,
        "gradient_accumulation_steps": gas,
        "world_size": ws,
        "rank": rk,
        "optimizer_step": data[:, 1].tolist(),
        "micro_batch": data[:, 2].tolist(),
        "packed": rule.kind == "flatten",
    }
    schedule = IterationSchedule.from_columns(
        {"epoch": data[:, 0], "batch_size": data[:, 3], "seq_len": data[:, 4],
         "tgt_len": data[:, 5], "tokens": data[:, 6], "sum_sq_len": data[:, 7]},
        meta=meta,
    )
    tgt = None if lengths.target is None else per_row_tgt
    return schedule.with_rows(RowLengths.from_lists(per_row, tgt))
