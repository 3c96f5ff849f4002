"""The profiled step is the step train() times: training_step, clip, optimizer, scheduler."""

import pytest

from seqpoint.exceptions import InputError

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


def _trainer(hf, tmp_path, **kw):
    import transformers

    tok = hf.tokenizer()
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, num_train_epochs=1,
        report_to=[], save_strategy="no", logging_strategy="no", use_cpu=kw.pop("use_cpu", True), seed=0,
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


def test_a_trained_trainers_workload_pickles_once_at_about_its_models_size(hf, tmp_path):
    """After train() the trainer holds AdamW's moments, accelerate's prepared objects and a
    recorded callback: the workload ships without them (issue 46 rows 1 and 2)."""
    import pickle

    import numpy as np

    from seqpoint.integrations.huggingface import SeqPointCallback, workload_from_trainer

    trainer = _trainer(hf, tmp_path, max_steps=2)
    trainer.add_callback(cb := SeqPointCallback(tmp_path / "trace.csv"))
    trainer.train()
    assert trainer.optimizer.state  # the trained moments, twice the model
    data = pickle.dumps(workload_from_trainer(trainer))
    model_bytes = sum({t.data_ptr(): t.numel() * t.element_size() for t in trainer.model.state_dict().values()}.values())
    assert len(data) < 1.5 * model_bytes
    copy = pickle.loads(data)
    assert copy.trainer.callback_handler is None and copy.trainer.accelerator is not trainer.accelerator
    assert np.isfinite(copy.step(copy.make_batch((2, 16, 0))))
    assert np.array_equal(pickle.loads(pickle.dumps(cb)).trace.time_s, cb.trace.time_s)


def test_a_trainer_trained_in_mixed_precision_pickles_and_each_copy_autocasts_as_train_does(hf, tmp_path):
    """train() under fp16/bf16 leaves accelerate's autocast forward on the model, which refuses to
    pickle (found on an H200 with fp16, processes = 2): the workload ships the model without it,
    the user's model keeps it, and the workload and its unpickled copy both run the forward in
    bf16 with fp32 outputs, as accelerate's prepared model does."""
    import pickle

    import torch

    from seqpoint.integrations.huggingface import workload_from_trainer

    trainer = _trainer(hf, tmp_path, max_steps=2, bf16=True)
    trainer.train()
    assert "_original_forward" in vars(trainer.model)
    wl = workload_from_trainer(trainer)
    copy = pickle.loads(pickle.dumps(wl))
    assert "_original_forward" in vars(trainer.model)
    for w in (wl, copy):
        seen: list[torch.dtype] = []
        linear = next(m for m in w.model.modules() if isinstance(m, torch.nn.Linear))
        handle = linear.register_forward_hook(lambda m, i, out, seen=seen: seen.append(out.dtype))
        out = w.model(**w.make_batch((2, 16, 0)))
        handle.remove()
        assert seen and set(seen) == {torch.bfloat16} and out.logits.dtype == torch.float32


def test_a_plain_list_dataset_needs_no_datasets_package(hf, tmp_path, monkeypatch):
    """The collator runs on a list's rows without importing ``datasets`` (a GPU image without it
    failed here); only a datasets.Dataset needs the package."""
    import sys

    import transformers

    from seqpoint.integrations.huggingface import workload_from_trainer

    trainer = _trainer(hf, tmp_path)
    trainer.train_dataset = [dict(row) for row in trainer.train_dataset]
    monkeypatch.setitem(sys.modules, "datasets", None)
    wl = workload_from_trainer(trainer)
    assert {"input_ids", "attention_mask", "labels"} <= wl._keys
    assert isinstance(trainer.data_collator, transformers.DataCollatorForLanguageModeling)


def test_the_trainer_workload_reads_no_deprecated_transformers_name(hf, tmp_path):
    """project_trainer builds its workload with workload_from_trainer, which read the model's
    deprecated is_gradient_checkpointing (a FutureWarning on every call)."""
    import warnings

    from seqpoint.integrations.huggingface import workload_from_trainer

    for checkpointing in (False, True):
        trainer = _trainer(hf, tmp_path, activation_checkpointing=checkpointing)
        with warnings.catch_warnings():
            warnings.simplefilter("error", FutureWarning)
            warnings.simplefilter("error", DeprecationWarning)
            wl = workload_from_trainer(trainer)
        assert wl.config["activation_checkpointing"] is checkpointing


def test_the_step_runs_through_an_accelerator_and_optimizer_of_its_own(hf, tmp_path):
    """train() steps an optimizer its accelerator prepared (under fp16 on a GPU: through a
    GradScaler: the gpu test below); the copy's are its own, the user's untouched."""
    from accelerate.optimizer import AcceleratedOptimizer

    from seqpoint.integrations.huggingface import workload_from_trainer

    trainer = _trainer(hf, tmp_path, fp16=True)  # on a CPU accelerate makes no GradScaler, nor does train()
    wl = workload_from_trainer(trainer)
    assert isinstance(wl.optimizer, AcceleratedOptimizer) and wl.trainer.accelerator is not trainer.accelerator
    assert wl.trainer.accelerator.scaler is None
    for _ in range(2):
        wl.step(wl.make_batch((2, 16, 0)))
    assert (wl.steps, wl.skipped_steps, wl.scheduler.last_epoch) == (2, 0, 2)
    assert trainer.optimizer is None


@pytest.mark.parametrize("state,match", [
    ("n_gpu", r"sees 2 GPUs in one process.*CUDA_VISIBLE_DEVICES=0.*torchrun"),
    ("is_deepspeed_enabled", r"runs under DeepSpeed.*on one GPU with a trainer made without DeepSpeed"),
    ("is_fsdp_enabled", r"runs under FSDP.*on one GPU with a trainer made without FSDP"),
])
def test_trainers_that_run_on_several_devices_are_refused(hf, tmp_path, monkeypatch, state, match):
    """The attributes are the ones transformers sets (args._n_gpu behind args.n_gpu; the
    trainer's flags from its accelerator's state): neither DataParallel, DeepSpeed nor FSDP
    can be built on a CPU."""
    from seqpoint.integrations.huggingface import project_trainer, workload_from_trainer

    trainer = _trainer(hf, tmp_path)
    monkeypatch.setattr(*((trainer.args, "_n_gpu", 2) if state == "n_gpu" else (trainer, state, True)))
    for call in (workload_from_trainer, project_trainer):
        with pytest.raises(InputError, match=match):
            call(trainer)


@pytest.mark.gpu
def test_an_fp16_step_on_cuda_scales_with_its_own_grad_scaler_and_says_when_it_skips(hf, tmp_path):
    import torch

    from seqpoint.exceptions import SeqPointWarning
    from seqpoint.integrations.huggingface import workload_from_trainer

    trainer = _trainer(hf, tmp_path, use_cpu=False, fp16=True, max_grad_norm=1.0)
    wl = workload_from_trainer(trainer)
    scaler = wl.trainer.accelerator.scaler
    assert scaler is not None and scaler is not trainer.accelerator.scaler and wl.optimizer.scaler is scaler
    batch = wl.make_batch((4, 32, 0))
    for _ in range(3):  # a fresh scale may skip some of these too: the count below says how many
        wl.step(batch)
    before = [p.detach().clone() for p in wl.model.parameters()]
    scaler.update(new_scale=2.0**127)  # the next loss times the scale overflows
    with pytest.warns(SeqPointWarning, match=rf"inf/NaN gradients in {wl.skipped_steps + 1} of the 4 steps run so far"):
        wl.step(batch)
    assert all(torch.equal(a, p) for a, p in zip(before, wl.model.parameters(), strict=True))
    assert scaler.get_scale() == 2.0**126 and trainer.accelerator.scaler.get_scale() == 2.0**16  # the user's: untouched
    scaler.update(new_scale=1024.0)
    wl.step(batch)
    assert not all(torch.equal(a, p) for a, p in zip(before, wl.model.parameters(), strict=True))


@pytest.mark.gpu
def test_recording_on_cuda_waits_for_the_device_nowhere_and_the_callback_pickles(hf, tmp_path):
    """The shapes are read from host copies made without blocking (no sync a micro-batch), and
    no CUDA event outlives on_train_end (issue 46 rows 1, 27)."""
    import linecache
    import pickle
    import warnings

    import numpy as np
    import torch

    from seqpoint.integrations.huggingface import (
        SeqPointCallback,
        schedule_from_trainer,
        workload_from_trainer,
    )

    trainer = _trainer(hf, tmp_path, use_cpu=False)
    schedule = schedule_from_trainer(trainer)
    trainer.add_callback(cb := SeqPointCallback(tmp_path / "trace.csv"))
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trainer.train()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    waits = [f"{w.filename}:{w.lineno}" for w in caught if "synchroniz" in str(w.message) and "seqpoint" in w.filename
             and "cuda.synchronize()" not in linecache.getline(w.filename, w.lineno)]  # the one at on_train_end
    assert not waits
    assert cb.trace.rows is not None and cb.trace.rows.equals(schedule.rows)
    assert np.array_equal(cb.trace.seq_len, schedule.seq_len) and np.all(cb.trace.time_s > 0)
    assert np.array_equal(pickle.loads(pickle.dumps(cb)).trace.time_s, cb.trace.time_s)
    copy = pickle.loads(pickle.dumps(workload_from_trainer(trainer)))
    assert np.isfinite(copy.step(copy.make_batch((int(schedule.batch_size[0]), int(schedule.seq_len[0]), 0))))
