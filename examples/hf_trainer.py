"""Project a Hugging Face Trainer run from a few SeqPoints and check it against the real run.

Run from the repository root: ``python examples/hf_trainer.py`` (CPU, about a minute).
The lines a user adds to their own script are marked ``# seqpoint``; everything else
builds a tiny, offline BERT masked-LM job standing in for the user's. The run is recorded
twice (two recorded runs give the noise floor); ``project_trainer`` profiles 6 SeqPoints of
the trainer's own step on a copy of its model, fed batches padded and masked from each
point's real sample lengths, and checks the projection against both runs.
"""

import random
from pathlib import Path

import datasets
import transformers
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

from seqpoint.integrations.huggingface import (  # seqpoint
    SeededSampler,
    SeqPointCallback,
    project_trainer,
)

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
    trainer.add_callback(SeededSampler())  # seqpoint: group_by_length draws the same order in both runs
    traces = []
    for run in (1, 2):
        trainer.add_callback(callback := SeqPointCallback(OUT / f"hf_trace{run}.csv"))  # seqpoint
        trainer.train()
        trainer.remove_callback(callback)
        traces.append(callback.trace)
    print(project_trainer(trainer, traces=traces, n_points=6))  # seqpoint


if __name__ == "__main__":
    main()
