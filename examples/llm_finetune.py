"""LLM fine-tuning: a Llama-style decoder trained on packed rows, projected from SeqPoints.

Two ways in, on the same model (random weights: nothing is downloaded):

* **Your Trainer** (``python examples/llm_finetune.py``, CPU, about two minutes): TRL's
  ``SFTTrainer`` with ``packing=True`` (best-fit packing, padding-free rows with
  ``position_ids`` restarting per document) on documents with WikiText-2's line lengths.
  ``project_trainer`` replays the trainer's own sampler and collator, profiles 10
  SeqPoints and projects the run; the recorded ``train()`` checks it. The lines a user
  adds to their own script are marked ``# seqpoint``.
* **A config** (``seqpoint run configs/llm-wikitext-packing.toml``): seqpoint's ``packing``
  policy over the same lengths and :class:`CausalLM` below, a ``UserWorkload`` whose
  batches are packed rows (``BatchShape.position_ids()``) or padded rows.

Attention FLOPs are counted as the kernel that runs computes them: on a CPU, SDPA takes a
packed row with a block-diagonal causal mask and computes the whole ``seq_len²`` score
matrix; a varlen flash kernel on a GPU (``attn_implementation="flash_attention_2"``)
computes each document's own ``sᵢ²`` (the schedule's ``sum_sq_len``), and torch's FLOP
counter counts it so.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import torch

from seqpoint.workloads import BatchShape, UserWorkload, WorkloadConfig

OUT = Path("runs/examples")


@dataclasses.dataclass(frozen=True, kw_only=True)
class CausalLMConfig(WorkloadConfig):
    """A small Llama-style decoder (RoPE, grouped-query attention, SwiGLU)."""

    vocab: int = 256
    """Vocabulary size."""
    hidden: int = 64
    """Model width."""
    layers: int = 2
    """Decoder layers."""
    heads: int = 4
    """Query heads (must divide ``hidden``)."""
    kv_heads: int = 2
    """Key/value heads (grouped-query attention; must divide ``heads``)."""
    ffn: int = 128
    """SwiGLU width."""
    max_position: int = 2048
    """Longest row (RoPE table)."""


def llama_config(c: CausalLMConfig):  # type: ignore[no-untyped-def]
    import transformers

    return transformers.LlamaConfig(
        vocab_size=c.vocab, hidden_size=c.hidden, num_hidden_layers=c.layers, num_attention_heads=c.heads,
        num_key_value_heads=c.kv_heads, intermediate_size=c.ffn, max_position_embeddings=c.max_position,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, attn_implementation="sdpa")


class CausalLM(UserWorkload):
    """One training step of :class:`CausalLMConfig`'s decoder on a padded or packed batch."""

    Config = CausalLMConfig

    def build_model(self) -> torch.nn.Module:
        import transformers

        return transformers.LlamaForCausalLM(llama_config(self.config))

    def build_batch(self, shape: BatchShape, gen: torch.Generator) -> dict[str, torch.Tensor]:
        ids = torch.randint(3, self.config.vocab, (shape.batch_size, shape.seq_len), generator=gen)
        if shape.row_of is not None or (shape.batch_size == 1 and len(shape.lengths) > 1):
            # Packed rows: positions restart at every document, so attention stays inside it
            # and no loss crosses a document boundary.
            pos = torch.as_tensor(shape.position_ids())
            starts = pos == 0
            starts[:, 0] = True
            return {"input_ids": ids, "position_ids": pos, "labels": ids.masked_fill(starts, -100)}
        real = torch.as_tensor(shape.real_mask())
        return {"input_ids": ids.masked_fill(~real, 0), "attention_mask": real.long(),
                "labels": ids.masked_fill(~real, -100)}


def document_lengths(n: int = 2000, longest: int = 512) -> np.ndarray:
    """Token counts of WikiText-2 validation lines (the bundled data), as instruction documents."""
    from seqpoint.traces import read_lengths

    lengths = read_lengths("bundled:wikitext-2-valid").src
    return np.clip(lengths[:n], 4, longest)


def users_trainer(config: CausalLMConfig | None = None, n_docs: int = 1000,  # type: ignore[no-untyped-def]
                  max_length: int = 256):
    """The user's job: TRL's SFTTrainer with best-fit packing (padding-free) on a CPU."""
    import datasets
    import transformers
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from trl import SFTConfig, SFTTrainer

    c = config or CausalLMConfig()
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, **{f"w{i}": i for i in range(3, c.vocab)}}
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="<pad>")), pad_token="<pad>", bos_token="<s>",
        eos_token="</s>")
    rng = np.random.default_rng(0)
    rows = [rng.integers(3, c.vocab, n).tolist() for n in document_lengths(n_docs, max_length)]
    torch.manual_seed(0)
    args = SFTConfig(output_dir=str(OUT / "llm"), per_device_train_batch_size=4, num_train_epochs=1,
                     packing=True, max_length=max_length, use_cpu=True, report_to=[], save_strategy="no",
                     logging_strategy="no", disable_tqdm=True, seed=0)
    return SFTTrainer(model=transformers.LlamaForCausalLM(llama_config(c)), args=args,
                      train_dataset=datasets.Dataset.from_dict({"input_ids": rows}), processing_class=tokenizer)


def main() -> None:
    from seqpoint.integrations.huggingface import SeqPointCallback, project_trainer  # seqpoint

    trainer = users_trainer()
    trainer.add_callback(recorder := SeqPointCallback(OUT / "llm_trace.csv"))  # seqpoint: record the run
    trainer.train()
    print(project_trainer(trainer, n_points=10, traces=[recorder.trace]).summary())  # seqpoint


if __name__ == "__main__":
    main()
