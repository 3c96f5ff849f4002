"""Project a Hugging Face Trainer run from a few SeqPoints and check it against the real run.

Run from the repository root: ``python examples/hf_trainer.py`` (CPU, about a minute).
The lines a user adds to their own script are marked ``# seqpoint``; everything else
builds a tiny, offline BERT masked-LM job standing in for the user's. The SeqPoints are
profiled by seqpoint's harness (warm-up, first-step and steady times) on a copy of the
trainer's model, fed batches padded and masked from each point's real sample lengths,
and the projection is checked against the recorded ``trainer.train()``.
"""

import random
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
from seqpoint.profiling import profile_points  # seqpoint
from seqpoint.selection import SeqPointSelector  # seqpoint
from seqpoint.workflows import validate_trace  # seqpoint

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
    points = SeqPointSelector(n_points=6).fit(schedule).to_seqpoints(schedule)  # seqpoint

    callback = SeqPointCallback(OUT / "hf_trace.csv")  # seqpoint: record the real run
    trainer.add_callback(callback)  # seqpoint
    trainer.train()

    # Profiling steps the model (dropout draws from torch's global RNG, which
    # group_by_length reads at train()), so it comes after train() in one process.
    workload = workload_from_trainer(trainer)  # seqpoint: the trainer's own step, real masks
    measured = profile_points(workload, points, progress=False)  # seqpoint: the real harness
    result = validate_trace(schedule, points, measured, callback.trace, first_n=6)  # seqpoint

    print(f"{result.n_steps} steps; SeqPoints profiled: {result.n_points}")
    print(f"real run      {result.measured_s:8.3f} s   (trace: {callback.written_to})")
    print(f"SeqPoints     {result.projected_s:8.3f} s   error {100 * result.error:+6.1f}%")
    print(f"first-6 steps {result.first_n_s:8.3f} s   error {100 * result.first_n_error:+6.1f}%")


if __name__ == "__main__":
    main()
