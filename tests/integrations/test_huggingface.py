import numpy as np
import pytest

from seqpoint.exceptions import InputError
from seqpoint.workloads import Workload

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]

_COMPARED = ("epoch", "batch_size", "seq_len", "tgt_len", "tokens", "sum_sq_len")


def _trainer(hf, tmp_path, *, collator="mlm", dataset=None, callbacks=(), dropout=0.1, **kw):
    import transformers

    tok = hf.tokenizer()
    if collator == "mlm":
        coll = transformers.DataCollatorForLanguageModeling(tok, mlm_probability=0.15,
                                                            pad_to_multiple_of=kw.pop("pad_to_multiple_of", None))
    elif collator == "flatten":
        coll = transformers.DataCollatorWithFlattening()
    else:
        coll = collator
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=kw.pop("batch_size", 8),
        num_train_epochs=kw.pop("epochs", 1), report_to=[], save_strategy="no", logging_strategy="no",
        use_cpu=True, seed=kw.pop("seed", 0), disable_tqdm=True, **kw)
    return transformers.Trainer(model=hf.bert(dropout), args=args, train_dataset=dataset or hf.dataset(),
                                data_collator=coll, processing_class=tok, callbacks=list(callbacks))


def _recorded(trainer, tmp_path):
    from seqpoint.integrations.huggingface import SeqPointCallback

    cb = SeqPointCallback(tmp_path / "trace.csv")
    trainer.add_callback(cb)
    trainer.train()
    return cb


def _assert_same(schedule, trace):
    recorded = trace.to_schedule()
    assert len(schedule) == len(recorded)
    for c in _COMPARED:
        np.testing.assert_array_equal(getattr(schedule, c), getattr(recorded, c), err_msg=c)
    assert schedule.meta["optimizer_step"] == recorded.meta["optimizer_step"]
    assert schedule.meta["micro_batch"] == recorded.meta["micro_batch"]


@pytest.mark.parametrize("case", [
    dict(epochs=2),
    dict(epochs=1, train_sampling_strategy="group_by_length"),
    dict(epochs=2, gradient_accumulation_steps=2, pad_to_multiple_of=8),
    dict(max_steps=7, gradient_accumulation_steps=2, dataloader_drop_last=True),
])
def test_schedule_equals_what_train_feeds_the_model(hf, tmp_path, case):
    from seqpoint.integrations.huggingface import schedule_from_trainer

    trainer = _trainer(hf, tmp_path, **case)
    schedule = schedule_from_trainer(trainer)
    cb = _recorded(trainer, tmp_path)
    _assert_same(schedule, cb.trace)
    assert np.all(cb.trace.time_s > 0)
    assert cb.written_to == tmp_path / "trace.csv"


def test_group_by_length_with_a_length_column_and_no_dropout_is_exact_over_epochs(hf, tmp_path):
    import transformers

    from seqpoint.integrations.huggingface import schedule_from_trainer

    # LengthGroupedSampler draws from the global RNG; training draws nothing from it
    # without dropout and with a padding-only collator, so every epoch is exact.
    rows = hf.dataset(with_length=True).map(lambda r: {"labels": [-100] * len(r["input_ids"])})
    trainer = _trainer(hf, tmp_path, collator=transformers.DataCollatorForTokenClassification(hf.tokenizer()),
                       dataset=rows, epochs=2, dropout=0.0, train_sampling_strategy="group_by_length")
    schedule = schedule_from_trainer(trainer)
    _assert_same(schedule, _recorded(trainer, tmp_path).trace)


def test_flattening_collator_is_one_packed_row_per_micro_batch(hf, tmp_path):
    from seqpoint.integrations.huggingface import schedule_from_trainer

    trainer = _trainer(hf, tmp_path, collator="flatten", batch_size=4, epochs=1)
    schedule = schedule_from_trainer(trainer)
    assert schedule.is_packed and np.all(schedule.batch_size == 1)
    assert np.all(schedule.sum_sq_len < schedule.seq_len ** 2)
    _assert_same(schedule, _recorded(trainer, tmp_path).trace)


@pytest.mark.parametrize("rank", [0, 1])
def test_two_ranks_match_the_real_sharded_dataloader(hf, tmp_path, rank):
    import torch
    from accelerate.data_loader import prepare_data_loader

    from seqpoint.integrations import read_batch
    from seqpoint.integrations.huggingface import schedule_from_trainer

    trainer = _trainer(hf, tmp_path, epochs=2, pad_to_multiple_of=8)
    schedule = schedule_from_trainer(trainer, world_size=2, rank=rank)
    # The real dataloader of rank `rank`: the trainer's sampler and collator over the
    # real rows, sharded by accelerate as a 2-process run does.
    loader = torch.utils.data.DataLoader(
        trainer.train_dataset, batch_size=8, sampler=trainer._get_train_sampler(trainer.train_dataset),
        collate_fn=trainer.data_collator)
    real = prepare_data_loader(loader, None, num_processes=2, process_index=rank, put_on_device=False,
                               use_seedable_sampler=True)
    shapes = []
    for epoch in range(2):
        real.set_epoch(epoch)
        shapes += [(epoch, *read_batch(b).shape) for b in real]
    np.testing.assert_array_equal(
        np.stack([getattr(schedule, c) for c in _COMPARED], axis=1), np.array(shapes))
    assert schedule.meta["world_size"] == 2


def test_schedule_does_not_change_the_run(hf, tmp_path):
    import torch

    from seqpoint.integrations.huggingface import schedule_from_trainer

    trainer = _trainer(hf, tmp_path, train_sampling_strategy="group_by_length")
    before = torch.random.get_rng_state()
    schedule_from_trainer(trainer)
    assert torch.equal(before, torch.random.get_rng_state())


def test_iterable_dataset_and_missing_lengths_get_one_clear_error(hf, tmp_path):
    import datasets

    from seqpoint.integrations.huggingface import schedule_from_trainer

    stream = hf.dataset().to_iterable_dataset()
    trainer = _trainer(hf, tmp_path, dataset=stream, max_steps=2)
    with pytest.raises(InputError, match="IterableDataset .*without per-sample lengths.*SeqPointCallback"):
        schedule_from_trainer(trainer)
    trainer = _trainer(hf, tmp_path, dataset=datasets.Dataset.from_dict({"text": ["a b"] * 10}))
    with pytest.raises(InputError, match="cannot be loaded as train.. loads it: No columns in the dataset match"):
        schedule_from_trainer(trainer)
    trainer = _trainer(hf, tmp_path, dataset=datasets.Dataset.from_dict({"text": ["a b"] * 10}),
                       train_sampling_strategy="group_by_length")
    with pytest.raises(InputError, match="no 'length' or 'input_ids' column.*group_by_length sampler's lengths "
                                         "are unknown.*SeqPointCallback"):
        schedule_from_trainer(trainer)
    trainer.train_dataset = datasets.Dataset.from_dict({"input_ids": []})  # (an empty one is falsy)
    with pytest.raises(InputError, match="train_dataset is empty, so there is nothing to replay"):
        schedule_from_trainer(trainer)


def test_the_trainers_model_or_args_instead_of_the_trainer_get_one_clear_error(hf, tmp_path):
    from seqpoint.integrations.huggingface import schedule_from_trainer, workload_from_trainer

    trainer = _trainer(hf, tmp_path, max_steps=2)
    for wrong, fn in ((trainer.model, schedule_from_trainer), (trainer.args, schedule_from_trainer),
                      (trainer.model, workload_from_trainer)):
        with pytest.raises(InputError, match=rf"Expected a transformers.Trainer, got a {type(wrong).__name__}"):
            fn(wrong)


def test_workload_runs_the_trainers_step_on_a_copy(hf, tmp_path):
    import torch

    from seqpoint.integrations.huggingface import workload_from_trainer

    trainer = _trainer(hf, tmp_path)
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    wl = workload_from_trainer(trainer)
    assert isinstance(wl, Workload)
    batch = wl.make_batch((4, 24, 0))
    assert tuple(batch["input_ids"].shape) == (4, 24)
    losses = [wl.step(batch) for _ in range(3)]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]
    assert trainer.optimizer is None
    assert all(torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())


def test_seq2seq_collator_pads_source_and_target_as_train_feeds_them(hf, tmp_path):
    import random

    import datasets
    import transformers

    from seqpoint.integrations.huggingface import schedule_from_trainer

    rng = random.Random(1)
    src = [[rng.randrange(5, 64) for _ in range(rng.randint(3, 40))] for _ in range(48)]
    tgt = [[rng.randrange(5, 64) for _ in range(rng.randint(2, 30))] for _ in range(48)]
    model = transformers.T5ForConditionalGeneration(transformers.T5Config(
        vocab_size=64, d_model=16, d_ff=32, d_kv=8, num_layers=1, num_heads=2,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, dropout_rate=0.0))
    tok = hf.tokenizer()
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_train_epochs=1,
        report_to=[], save_strategy="no", logging_strategy="no", use_cpu=True, seed=0,
        disable_tqdm=True)
    trainer = transformers.Trainer(
        model=model, args=args,
        train_dataset=datasets.Dataset.from_dict({"input_ids": src, "labels": tgt}),
        data_collator=transformers.DataCollatorForSeq2Seq(tok, model=model, pad_to_multiple_of=8),
        processing_class=tok)
    schedule = schedule_from_trainer(trainer)
    cb = _recorded(trainer, tmp_path)
    _assert_same(schedule, cb.trace)
    assert np.all(schedule.tgt_len > 0) and np.all(schedule.tgt_len % 8 == 0)
