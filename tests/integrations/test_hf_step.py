"""The profiled step is the step train() times: training_step, clip, optimizer, scheduler."""

import pytest

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


def _trainer(hf, tmp_path, **kw):
    import transformers

    tok = hf.tokenizer()
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_train_epochs=1,
        report_to=[], save_strategy="no", logging_strategy="no", use_cpu=True, seed=0,
        disable_tqdm=True, **kw)
    return transformers.Trainer(model=hf.bert(), args=args, train_dataset=hf.dataset(n=40),
                                data_collator=transformers.DataCollatorForLanguageModeling(tok),
                                processing_class=tok)


def test_workload_steps_its_own_scheduler_and_leaves_the_trainer_alone(hf, tmp_path):
    from seqpoint.integrations.huggingface import workload_from_trainer

    trainer = _trainer(hf, tmp_path, warmup_steps=10, max_grad_norm=0.5)
    wl = workload_from_trainer(trainer)
    assert wl.config["max_grad_norm"] == 0.5
    batch = wl.make_batch((2, 16, 0))
    lrs = []
    for _ in range(3):
        wl.step(batch)
        lrs.append(wl.scheduler.get_last_lr()[0])
    assert lrs[0] < lrs[1] < lrs[2]  # linear warm-up: the scheduler is stepped each step
    assert trainer.optimizer is None and trainer.lr_scheduler is None
    assert not hasattr(trainer, "current_gradient_accumulation_steps")
    assert all(p.grad is None for p in wl.model.parameters())  # zero_grad as train() does


def test_callback_keeps_the_seconds_between_steps_apart(hf, tmp_path):
    from seqpoint.integrations.huggingface import SeqPointCallback

    trainer = _trainer(hf, tmp_path)
    cb = SeqPointCallback(tmp_path / "trace.csv")
    trainer.add_callback(cb)
    trainer.train()
    assert cb.trace.meta["between_steps_s"] > 0
