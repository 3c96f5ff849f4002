"""Tiny, offline Hugging Face pieces: a word-level tokenizer, a 2-layer BERT, a dataset."""

import random

import pytest


def tiny_tokenizer():
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import PreTrainedTokenizerFast

    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
    vocab.update({f"w{i}": 5 + i for i in range(59)})
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                   bos_token="[CLS]", eos_token="[SEP]")


def tiny_bert(dropout=0.1):
    from transformers import BertConfig, BertForMaskedLM

    cfg = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=256,
                     hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    return BertForMaskedLM(cfg)


def tiny_llama(dropout=0.0):
    """A Llama-style decoder (grouped-query attention, RoPE, SwiGLU), random weights."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                      attention_dropout=dropout, pad_token_id=0, eos_token_id=3, bos_token_id=2)
    return LlamaForCausalLM(cfg)


def tiny_dataset(n=90, seed=0, with_length=False):
    import datasets

    rng = random.Random(seed)
    ids = [[rng.randrange(5, 64) for _ in range(rng.randint(3, 60))] for _ in range(n)]
    cols = {"input_ids": ids}
    if with_length:
        cols["length"] = [len(x) for x in ids]
    return datasets.Dataset.from_dict(cols)


@pytest.fixture
def hf():
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    pytest.importorskip("datasets")
    pytest.importorskip("tokenizers")
    return type("HF", (), {"tokenizer": staticmethod(tiny_tokenizer), "bert": staticmethod(tiny_bert),
                           "llama": staticmethod(tiny_llama), "dataset": staticmethod(tiny_dataset)})
