"""LLM fine-tuning: a Llama-style decoder with padding-free packing (transformers' flattening
collator, TRL's SFTTrainer with packing) and group_by_length, replayed and profiled exactly."""

import pickle
import warnings

import numpy as np
import pytest
from test_huggingface import _assert_same, _recorded

from seqpoint.exceptions import SeqPointWarning

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


def _args(tmp_path, cls=None, **kw):
    import transformers

    cls = cls or transformers.TrainingArguments
    return cls(output_dir=str(tmp_path / "out"), per_device_train_batch_size=kw.pop("batch_size", 4),
               num_train_epochs=kw.pop("epochs", 1), report_to=[], save_strategy="no", logging_strategy="no",
               use_cpu=True, seed=0, disable_tqdm=True, **kw)


def _llm_trainer(hf, tmp_path, collator, *, dropout=0.0, **kw):
    import transformers

    return transformers.Trainer(model=hf.llama(dropout), args=_args(tmp_path, **kw),
                                train_dataset=hf.dataset(n=40, with_length=True), data_collator=collator,
                                processing_class=hf.tokenizer())


def _profiled(trainer, schedule, n_points=3):
    from seqpoint.integrations.huggingface import workload_from_trainer
    from seqpoint.profiling import ProfileConfig, profile_points
    from seqpoint.selection import SeqPointSelector

    points = SeqPointSelector(n_points=n_points).fit(schedule).to_seqpoints(schedule)
    ms = profile_points(workload_from_trainer(trainer), points, ProfileConfig(warmup=1, repeats=1,
                        metrics=("time", "flops")), progress=False)
    assert all(m.ok and m.metrics["flops"] > 0 for m in ms.measurements), [m.message for m in ms.measurements]
    return points, ms


def test_flattening_collator_on_a_causal_lm_is_replayed_profiled_and_counted(hf, tmp_path):
    import transformers

    from seqpoint.integrations.huggingface import schedule_from_trainer, workload_from_trainer
    from seqpoint.profiling import count_point
    from seqpoint.workloads import BatchShape

    trainer = _llm_trainer(hf, tmp_path, transformers.DataCollatorWithFlattening())
    schedule = schedule_from_trainer(trainer)
    assert schedule.is_packed and schedule.meta["shapes"] == "padding rule"
    _assert_same(schedule, _recorded(trainer, tmp_path).trace)
    _profiled(trainer, schedule)
    # On a CPU, SDPA runs a packed row with a block-diagonal causal mask over the whole row:
    # the kernel computes (and the count counts) seq_len², not the documents' Σ sᵢ² that a
    # varlen flash kernel computes; the same row unpacked counts the same.
    wl = workload_from_trainer(trainer)
    docs = [100, 60, 40]
    sig = (1, 200, 0, sum(d * d for d in docs))
    packed = count_point(wl, sig, shape=BatchShape.of(sig, docs))
    assert packed["flops"] == count_point(wl, (1, 200, 0))["flops"]
    assert packed["flops_batched_gemm"] > 0


def test_trl_sft_packing_is_replayed_and_its_varlen_batch_profiled(hf, tmp_path):
    trl = pytest.importorskip("trl")

    from seqpoint.integrations.huggingface import schedule_from_trainer, workload_from_trainer
    from seqpoint.workloads import BatchShape

    args = _args(tmp_path, trl.SFTConfig, batch_size=2, packing=True, max_length=128)
    trainer = trl.SFTTrainer(model=hf.llama(), args=args, train_dataset=hf.dataset(n=60),
                             processing_class=hf.tokenizer())
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeqPointWarning)
        schedule = schedule_from_trainer(trainer)
        wl = workload_from_trainer(trainer)
    # TRL turns activation checkpointing on, and train() enables it when it starts: the
    # profiled copy has it (a step without the recomputed forward cost 16-20% less).
    assert wl.config["activation_checkpointing"] and wl.model.is_gradient_checkpointing
    assert not trainer.model.is_gradient_checkpointing
    assert schedule.meta["collator"] == "trl.DataCollatorForLanguageModeling"
    assert schedule.meta["shapes"] == "collator" and schedule.is_packed
    assert np.all(schedule.batch_size == 1) and np.all(schedule.seq_len[:-1] > 128)  # 2 packed rows in one
    trace = _recorded(trainer, tmp_path).trace
    _assert_same(schedule, trace)
    assert trace.to_schedule().is_packed  # a recorded run read back keeps sum_sq_len in its signatures
    docs, _ = schedule.rows.row(0)
    sig = (1, int(schedule.seq_len[0]), 0, int(schedule.sum_sq_len[0]))
    batch = wl.make_batch(BatchShape.of(sig, docs))
    assert {"input_ids", "labels", "position_ids", "cu_seq_lens_q", "max_length_k"} <= set(batch)
    np.testing.assert_array_equal(np.diff(batch["cu_seq_lens_q"].numpy()), docs)
    _profiled(trainer, schedule)
    # Trained in bf16 (SFTConfig's default), the model has accelerate's forward over TRL's fused
    # LM head: it ships without the first (which refuses to pickle) and keeps the second.
    assert args.bf16 and "_original_forward" in vars(trainer.model)
    shipped = pickle.loads(pickle.dumps(wl))
    assert np.isfinite(shipped.step(batch)) and "_original_forward" in vars(trainer.model)


def test_group_by_length_on_a_causal_lm_with_dropout_is_exact_over_two_epochs(hf, tmp_path):
    import transformers

    from seqpoint.integrations.huggingface import SeededSampler, schedule_from_trainer

    tok = hf.tokenizer()
    trainer = _llm_trainer(hf, tmp_path, transformers.DataCollatorForLanguageModeling(tok, mlm=False),
                           dropout=0.1, epochs=2, train_sampling_strategy="group_by_length")
    trainer.add_callback(SeededSampler())
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeqPointWarning)
        schedule = schedule_from_trainer(trainer)
    assert schedule.n_epochs == 2
    _assert_same(schedule, _recorded(trainer, tmp_path).trace)


def test_the_llm_config_counts_its_packed_rows_as_they_run():
    """configs/llm-wikitext-packing.toml: packed rows of WikiText-2 documents for the example's
    Llama-style step. The step cannot run on the meta device (transformers' masks read
    values), so it is counted on real steps; the run's exact FLOPs count each signature's
    real packed batch, as the SeqPoints are counted, so a projection of a deterministic
    metric is checked against the same kernel (on the CPU, SDPA with a mask runs the math
    kernel: its backward has 4 products, not the flash kernel's 5)."""
    pytest.importorskip("transformers")
    from seqpoint.profiling import count_point, exact_totals
    from seqpoint.selection import basis_components
    from seqpoint.workflows import build_schedule, load_config, signature_shapes
    from seqpoint.workloads import WorkloadRecipe

    cfg = load_config("configs/llm-wikitext-packing.toml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeqPointWarning)
        schedule = build_schedule(cfg.lengths, cfg.batching).head(3)
    assert schedule.is_packed and "dense_quadratic" in basis_components(schedule)[0]
    wl = WorkloadRecipe.of(cfg.workload.name, cfg.workload.set).build()
    shapes = signature_shapes(wl, schedule)
    assert shapes is not None and all(s.row_of is not None for s in shapes)
    exact = exact_totals(wl, schedule, shapes=shapes)
    sig = tuple(int(v) for v in exact.signatures[0])
    counted = count_point(wl, sig, shape=shapes[0])
    assert exact.per_signature["flops"][0] == counted["flops"]
    assert counted["flops"] < count_point(wl, sig)["flops"]  # the full-row stand-in runs another kernel


def test_the_llm_example_projects_a_trl_packing_job(tmp_path, monkeypatch):
    pytest.importorskip("trl")
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("llm_finetune", "examples/llm_finetune.py")
    example = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "llm_finetune", example)  # its dataclass looks its module up
    spec.loader.exec_module(example)
    monkeypatch.setattr(example, "OUT", tmp_path)
    from seqpoint.integrations.huggingface import project_trainer

    trainer = example.users_trainer(example.CausalLMConfig(hidden=32, ffn=64), n_docs=40, max_length=128)
    result = project_trainer(trainer, n_points=3)
    assert result.schedule.is_packed and result.schedule.meta["collator"] == "trl.DataCollatorForLanguageModeling"
    assert result.projected_s > 0 and "pays off" in result.summary()
