"""Project a Hugging Face Trainer run from a few SeqPoints and check it against the real run.

Run from the repository root: ``python examples/hf_trainer.py`` (CPU, about a minute).
The lines a user adds to their own script are marked ``# seqpoint``; everything else
builds a tiny, offline BERT masked-LM job standing in for the user's.
"""

import random
import statistics
import time
from pathlib import Path

import datasets
import transformers
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from seqpoint.integrations.huggingface import (  # seqpoint
    SeqPointCallback,
    schedule_from_trainer,
    workload_from_trainer,
)
from seqpoint.selection import SeqPointSelector  # seqpoint

OUT = Path("runs/examples")


def users_trainer() -> transformers.Trainer:
    """The user's job: a 2-layer BERT, variable-length samples, group_by_length."""
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
    vocab.update({f"w{i}": 5 + i for i in range(251)})
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", mask_token="[MASK]")
    rng = random.Random(0)
    rows = [[rng.randrange(5, 256) for _ in range(rng.randint(8, 200))] for _ in range(600)]
    config = transformers.BertConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=128,
                                     max_position_embeddings=256)
    args = transformers.TrainingArguments(
        output_dir=str(OUT / "hf"), per_device_train_batch_size=16, num_train_epochs=1,
        train_sampling_strategy="group_by_length", use_cpu=True, report_to=[],
        save_strategy="no", logging_strategy="no", disable_tqdm=True, seed=0)
    return transformers.Trainer(
        model=transformers.BertForMaskedLM(config), args=args,
        train_dataset=datasets.Dataset.from_dict({"input_ids": rows}),
        data_collator=transformers.DataCollatorForLanguageModeling(tokenizer, pad_to_multiple_of=8),
        processing_class=tokenizer)


def main() -> None:
    trainer = users_trainer()

    schedule = schedule_from_trainer(trainer)  # seqpoint: every micro-batch train() will see
    sel = SeqPointSelector(n_points=6).fit(schedule)  # seqpoint: a few representatives
    workload = workload_from_trainer(trainer)  # seqpoint: the trainer's own step
    projected = 0.0
    for point, weight in zip(sel.points_, sel.weights_, strict=True):  # seqpoint: profile them
        sig = (int(schedule.batch_size[point]), int(schedule.seq_len[point]), 0)
        batch = workload.make_batch(sig)
        workload.step(batch)  # warm-up
        times = []
        for _ in range(3):
            start = time.perf_counter()
            workload.step(batch)
            times.append(time.perf_counter() - start)
        projected += float(weight) * statistics.median(times)  # seqpoint: total ≈ Σ weight × time

    callback = SeqPointCallback(OUT / "hf_trace.csv")  # seqpoint: record the real run
    trainer.add_callback(callback)  # seqpoint
    trainer.train()

    real = callback.trace.total_time_s
    first = callback.trace.step_times_s()[:6].mean() * len(schedule)
    print(f"{len(schedule)} iterations; SeqPoints profiled: {len(sel.points_)}")
    print(f"real run      {real:8.3f} s   (trace: {callback.written_to})")
    print(f"SeqPoints     {projected:8.3f} s   error {100 * (projected / real - 1):+6.1f}%")
    print(f"first-6 steps {first:8.3f} s   error {100 * (first / real - 1):+6.1f}%")


if __name__ == "__main__":
    main()
