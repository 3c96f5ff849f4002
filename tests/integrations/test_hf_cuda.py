"""A Trainer's recorded run on CUDA projected in worker processes (audit rows 1, 2, 3, 10): a
tiny BERT made from a config and a plain list as its dataset (no download, no ``datasets``)."""

import random

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


def _trainer(tmp_path, **kw):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel

    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, **{f"w{i}": 5 + i for i in range(59)}}
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="[UNK]")),
                                               pad_token="[PAD]", unk_token="[UNK]", mask_token="[MASK]")
    model = transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=128))
    rng = random.Random(0)
    data = [{"input_ids": [rng.randrange(5, 64) for _ in range(rng.randint(3, 60))]} for _ in range(48)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), per_device_train_batch_size=8, max_steps=6, report_to=[],
        save_strategy="no", logging_strategy="no", seed=0, disable_tqdm=True, **kw)
    return transformers.Trainer(model=model, args=args, train_dataset=data, processing_class=tok,
                                data_collator=transformers.DataCollatorForLanguageModeling(tok))


@pytest.mark.parametrize("fp16", [False, True])
def test_a_recorded_cuda_run_is_projected_in_workers(tmp_path, fp16):
    """The trained trainer with its recording callback ships to two workers (row 1: no CUDA event
    travels; row 2: without its optimizer and accelerator), every point is timed there with the
    copy's own GradScaler under fp16 (row 10), and the parent takes no step on the GPU (row 3):
    its peak grows by at most the one model copy it builds."""
    import torch

    from seqpoint.integrations.huggingface import SeqPointCallback, project_trainer

    trainer = _trainer(tmp_path, fp16=fp16)
    trainer.add_callback(cb := SeqPointCallback(tmp_path / "trace.csv"))
    trainer.train()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    held = torch.cuda.memory_allocated()
    copy_bytes = sum(t.numel() * t.element_size() for t in (*trainer.model.parameters(), *trainer.model.buffers()))
    result = project_trainer(trainer, traces=[cb.trace], n_points=3, processes=2)
    assert result.processes == 2
    assert all(m.ok for m in result.measurements.measurements), [m.message for m in result.measurements.measurements]
    assert result.measurements.environment["device_type"] == "cuda" and result.projected_s > 0
    tensors = len(list(trainer.model.parameters())) + len(list(trainer.model.buffers()))
    assert torch.cuda.max_memory_allocated() - held <= copy_bytes + 512 * tensors  # the allocator's 512-byte blocks
