"""Any collator: the replay's shapes are what train() feeds the model, micro-batch for micro-batch.

Issue 32's first finding: a plain function wrapping DataCollatorWithPadding(pad_to_multiple_of=8)
and adding labels was replayed as "pad to the longest" (483 where train() fed 488), silently.
"""

import functools
import warnings

import numpy as np
import pytest
from test_huggingface import _assert_same, _recorded, _trainer

from seqpoint.exceptions import SeqPointWarning

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


def _with_labels(features, *, inner):
    batch = inner(features)
    batch["labels"] = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    return batch


def _collators(tok):
    import transformers

    class MaxLength(transformers.DataCollatorWithPadding):
        def __call__(self, features):
            return _with_labels(features, inner=super().__call__)

    pad8 = transformers.DataCollatorWithPadding(tok, pad_to_multiple_of=8)

    def function(features):  # the usual way to add labels
        return _with_labels(features, inner=pad8)

    return {
        "function": (function, "function"),
        "lambda": (lambda f: _with_labels(f, inner=transformers.DataCollatorWithPadding(tok, pad_to_multiple_of=4)),
                   "<lambda>"),
        "partial": (functools.partial(_with_labels, inner=transformers.DataCollatorWithPadding(
            tok, pad_to_multiple_of=16)), "partial(_with_labels)"),
        "max_length subclass": (MaxLength(tok, padding="max_length", max_length=64),
                                "test_hf_collators.MaxLength"),
        "transformers' own": (transformers.DataCollatorForLanguageModeling(tok, pad_to_multiple_of=8),
                              "transformers.DataCollatorForLanguageModeling"),
    }


@pytest.mark.parametrize("kind", ["function", "lambda", "partial", "max_length subclass", "transformers' own"])
def test_any_collator_replays_what_train_feeds(hf, tmp_path, kind):
    from seqpoint.integrations.huggingface import schedule_from_trainer

    collator, name = _collators(hf.tokenizer())[kind]
    trainer = _trainer(hf, tmp_path, collator=collator, dataset=hf.dataset(n=40))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeqPointWarning)
        schedule = schedule_from_trainer(trainer)
    assert schedule.meta["collator"] == name
    assert schedule.meta["shapes"] == ("padding rule" if kind == "transformers' own" else "collator")
    _assert_same(schedule, _recorded(trainer, tmp_path).trace)
    multiple = {"function": 8, "lambda": 4, "partial": 16, "max_length subclass": 64, "transformers' own": 8}[kind]
    assert np.all(schedule.seq_len % multiple == 0)


def test_a_padding_rule_that_disagrees_with_the_collator_falls_back_to_collating(hf, tmp_path):
    import torch.nn.functional as F
    import transformers

    from seqpoint.integrations.huggingface import schedule_from_trainer

    # group_by_length draws its order from the global RNG: the collated pass after a failed
    # check must start from the state the first pass found, as train() does.
    trainer = _trainer(hf, tmp_path, collator=transformers.DataCollatorForLanguageModeling(hf.tokenizer()),
                       dataset=hf.dataset(n=24), train_sampling_strategy="group_by_length", dropout=0.0)
    exact = schedule_from_trainer(trainer)
    # The user's collator instance pads one column more than transformers' own rule says.
    collator, own = trainer.data_collator, trainer.data_collator.torch_call

    def one_more(examples):  # type: ignore[no-untyped-def]
        batch = own(examples)
        for key, value in (("input_ids", collator.tokenizer.pad_token_id), ("attention_mask", 0), ("labels", -100)):
            if key in batch:
                batch[key] = F.pad(batch[key], (0, 1), value=value)
        return batch

    collator.torch_call = one_more
    with pytest.warns(SeqPointWarning, match=r"padding rule of transformers.DataCollatorForLanguageModeling differs from "
                                             r"what the collator returns for micro-batch 0; every micro-batch is "
                                             "collated instead"):
        fallback = schedule_from_trainer(trainer)
    assert fallback.meta["shapes"] == "collator"
    assert (fallback.seq_len == exact.seq_len + 1).all() and (fallback.batch_size == exact.batch_size).all()
    _assert_same(fallback, _recorded(trainer, tmp_path).trace)


@pytest.mark.parametrize("wrapped", [False, True])
def test_mlm_masking_in_the_collator_is_replayed_and_the_rngs_are_left_as_found(hf, tmp_path, wrapped):
    """A collator that draws from the global RNG (MLM masking) is collated in order, so a
    group_by_length order drawn after it is exact without dropout, transformers' own MLM
    collator included (its padding rule would skip the draws); torch, numpy and Python
    RNGs are left as found."""
    import random

    import torch
    import transformers

    from seqpoint.integrations.huggingface import schedule_from_trainer

    tok = hf.tokenizer()
    mlm = transformers.DataCollatorForLanguageModeling(tok)
    trainer = _trainer(hf, tmp_path, collator=(lambda f: mlm(f)) if wrapped else mlm,
                       dataset=hf.dataset(n=40, with_length=True),
                       epochs=2, dropout=0.0, train_sampling_strategy="group_by_length")
    states = torch.random.get_rng_state(), np.random.get_state()[1].copy(), random.getstate()
    with pytest.warns(SeqPointWarning, match="SeededSampler"):
        schedule = schedule_from_trainer(trainer)
    assert torch.equal(states[0], torch.random.get_rng_state())
    assert np.array_equal(states[1], np.random.get_state()[1]) and states[2] == random.getstate()
    _assert_same(schedule, _recorded(trainer, tmp_path).trace)


def test_the_trainer_workload_travels_to_a_worker_without_its_datasets(hf, tmp_path):
    """[profile] processes > 1 sends the workload pickled: a collator defined in the user's
    script travels by value (cloudpickle), the datasets stay behind, and the replay leaves
    accelerate's process-wide gradient state as it found it (a dataloader left registered
    there held a weakref, which does not pickle)."""
    import cloudpickle

    from seqpoint.integrations.huggingface import schedule_from_trainer, workload_from_trainer

    collator, _ = _collators(hf.tokenizer())["function"]
    trainer = _trainer(hf, tmp_path, collator=collator, dataset=hf.dataset(n=400))
    before = list(trainer.accelerator.gradient_state.dataloader_references)
    schedule = schedule_from_trainer(trainer)
    assert trainer.accelerator.gradient_state.dataloader_references == before
    wl = workload_from_trainer(trainer)
    copy = cloudpickle.loads(cloudpickle.dumps(wl))
    assert copy.trainer.train_dataset is None and trainer.train_dataset is not None
    p = schedule.rows.row(0)[0]
    from seqpoint.workloads import BatchShape

    shape = BatchShape.of((int(schedule.batch_size[0]), int(schedule.seq_len[0]), 0), p)
    assert set(copy.make_batch(shape)) == set(wl.make_batch(shape))
    assert np.isfinite(copy.step(copy.make_batch(shape)))


def test_seq2seq_collator_on_a_decoder_only_model_pads_no_target(hf, tmp_path):
    """DataCollatorForSeq2Seq is a common supervised fine-tuning collator for decoder-only
    models: its labels are the input's, with no separate target; the padding rule holds."""
    import transformers

    from seqpoint.integrations.huggingface import schedule_from_trainer

    rows = hf.dataset(n=40).map(lambda r: {"labels": r["input_ids"]})
    trainer = transformers.Trainer(
        model=hf.llama(), args=_trainer(hf, tmp_path, max_steps=1).args, train_dataset=rows,
        data_collator=transformers.DataCollatorForSeq2Seq(hf.tokenizer(), pad_to_multiple_of=8),
        processing_class=hf.tokenizer())
    trainer.args.max_steps = -1
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeqPointWarning)
        schedule = schedule_from_trainer(trainer)
    assert schedule.meta["shapes"] == "padding rule" and not schedule.tgt_len.any()
    _assert_same(schedule, _recorded(trainer, tmp_path).trace)
