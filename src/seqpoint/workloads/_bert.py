"""BERT pre-training (Devlin et al., 2019): a post-layer-norm GELU encoder with explicit attention (the operations the
"Demystifying BERT" study breaks out), an MLM head tied to the word embeddings at the masked positions only (as NVIDIA's
reference), LAMB by default. ``seq_len`` is tokens per row (``tgt_len`` ignored); with ``sum_sq_len`` (packed rows) each
row is split into documents, and attention gets their block-diagonal mask (values, not cost)."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, ClassVar

from seqpoint._params import Constraint, Interval
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.workloads._base import Dims, TorchWorkload, WorkloadConfig

if TYPE_CHECKING:
    import torch

__all__ = ["Bert", "BertConfig", "packed_document_lengths"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class BertConfig(WorkloadConfig):
    """Size and training settings of a BERT pre-training workload."""

    vocab: int = 30522
    """WordPiece vocabulary."""
    hidden: int = 1024
    """Model width."""
    layers: int = 24
    """Transformer layers."""
    heads: int = 16
    """Attention heads (must divide ``hidden``)."""
    ffn: int = 4096
    """Feed-forward width."""
    max_position: int = 512
    """Longest sequence (learned position embeddings)."""
    dropout: float = 0.1
    """Dropout on embeddings, attention probabilities and residual branches."""
    mlm_fraction: float = 0.15
    """Fraction of tokens per row that are masked and predicted."""
    optimizer: str = "lamb"
    """``lamb`` (the NVIDIA/Demystifying-BERT recipe) or ``adamw``, ``adam``, ``sgd``."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **WorkloadConfig._parameter_constraints,
        **{key: [Interval(int, 1)] for key in ("hidden", "layers", "heads", "ffn", "max_position")},
        "vocab": [Interval(int, 5)],
        "dropout": [Interval(float, 0, 1, closed="left", word="")],
        "mlm_fraction": [Interval(float, 0, 1, closed="right", word="")],
    }

    def _check(self) -> None:
        if self.hidden % self.heads:
            raise ConfigError(f"The 'heads' parameter of BertConfig must divide hidden={self.hidden}. "
                              f"Got {self.heads}.")


# ``paper`` is BERT-large (the Demystifying-BERT study's model); ``base`` is BERT-base.
BertConfig.PRESETS = {
    "tiny": BertConfig(vocab=512, hidden=32, layers=2, heads=2, ffn=64, dropout=0.0, lr=3e-3),
    "small": BertConfig(vocab=30522, hidden=256, layers=4, heads=4, ffn=1024),
    "base": BertConfig(hidden=768, layers=12, heads=12, ffn=3072),
    "paper": BertConfig(),
}


def packed_document_lengths(seq_len: int, sum_sq: int) -> list[int]:
    """Split ``seq_len`` tokens into documents whose squared lengths sum to about ``sum_sq``
    (greedy: each the longest that leaves the rest fillable with length-1 documents)."""
    lengths: list[int] = []
    left, budget = seq_len, max(sum_sq, seq_len)
    while left > 0:
        # largest d with d^2 + (left - d) <= budget
        d = int((1 + math.isqrt(max(0, 1 + 4 * (budget - left)))) // 2)
        d = max(1, min(left, d))
        while d > 1 and d * d + (left - d) > budget:
            d -= 1
        lengths.append(d)
        left -= d
        budget -= d * d
    return lengths


class Bert(TorchWorkload):
    """BERT pre-training step (see :class:`BertConfig`)."""

    family: ClassVar[str] = "bert"
    Config = BertConfig
    config: BertConfig

    def _build_model(self) -> torch.nn.Module:
        cfg = self.config
        import torch
        from torch import nn

        h, nh = cfg.hidden, cfg.heads
        hd = h // nh

        class Layer(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.q, self.k, self.v = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
                self.out = nn.Linear(h, h)
                self.ln1, self.ln2 = nn.LayerNorm(h, eps=1e-12), nn.LayerNorm(h, eps=1e-12)
                self.ff1, self.ff2 = nn.Linear(h, cfg.ffn), nn.Linear(cfg.ffn, h)
                self.drop = nn.Dropout(cfg.dropout)

            def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
                b, n, _ = x.shape

                def heads(t: torch.Tensor) -> torch.Tensor:
                    return t.view(b, n, nh, hd).transpose(1, 2)  # (B, heads, L, hd)

                q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
                scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd)  # (B, heads, L, L)
                if mask is not None:
                    scores = scores + mask
                probs = self.drop(scores.softmax(-1))
                ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, n, h)
                x = self.ln1(x + self.drop(self.out(ctx)))
                y = self.ff2(self.drop(nn.functional.gelu(self.ff1(x))))
                return self.ln2(x + self.drop(y))

        class Model(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.word = nn.Embedding(cfg.vocab, h)
                self.pos = nn.Embedding(cfg.max_position, h)
                self.seg = nn.Embedding(2, h)
                self.ln = nn.LayerNorm(h, eps=1e-12)
                self.drop = nn.Dropout(cfg.dropout)
                self.layers = nn.ModuleList([Layer() for _ in range(cfg.layers)])
                self.head = nn.Linear(h, h)
                self.head_ln = nn.LayerNorm(h, eps=1e-12)
                self.head_bias = nn.Parameter(torch.zeros(cfg.vocab))
                self.loss_fn = nn.CrossEntropyLoss()
                self.apply(self._init)

            @staticmethod
            def _init(m: nn.Module) -> None:
                # BERT's initialiser: N(0, 0.02) weights, zero biases
                if isinstance(m, nn.Linear | nn.Embedding):
                    nn.init.normal_(m.weight, std=0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)

            def forward(self, input_ids: torch.Tensor, segment_ids: torch.Tensor, positions: torch.Tensor,
                        masked_positions: torch.Tensor, mlm_labels: torch.Tensor,
                        attention_mask: torch.Tensor | None = None) -> torch.Tensor:
                x = self.word(input_ids) + self.pos(positions) + self.seg(segment_ids)
                x = self.drop(self.ln(x))
                for layer in self.layers:
                    x = layer(x, attention_mask)
                idx = masked_positions.unsqueeze(-1).expand(-1, -1, x.shape[-1])
                y = torch.gather(x, 1, idx)  # (B, P, H): only masked positions are predicted
                y = self.head_ln(nn.functional.gelu(self.head(y)))
                logits = (y @ self.word.weight.t() + self.head_bias).float()
                return self.loss_fn(logits.flatten(0, 1), mlm_labels.flatten())

        return Model()

    def _make_inputs(self, dims: Dims, gen: torch.Generator) -> dict[str, torch.Tensor]:
        import torch

        batch_size, seq_len, _, sum_sq_len = dims
        cfg = self.config
        if seq_len > cfg.max_position:
            raise InputError(f"{self.name}: seq_len {seq_len} exceeds max_position={cfg.max_position}; "
                             f"use --set workload.set.max_position={seq_len} or shorter sequences.")
        p = max(1, min(seq_len, round(cfg.mlm_fraction * seq_len)))  # masked (predicted) positions per row
        ids = torch.randint(5, cfg.vocab, (batch_size, seq_len), generator=gen)
        masked = torch.sort(torch.rand(batch_size, seq_len, generator=gen).argsort(-1)[:, :p], -1).values
        labels = torch.gather(ids, 1, masked)
        ids = ids.scatter(1, masked, 4)  # 4 plays [MASK]
        seg = (torch.arange(seq_len) >= seq_len // 2).long().expand(batch_size, -1).contiguous()
        # Packed rows all hold the same documents: positions restart at each, and an additive
        # block-diagonal mask (B, 1, L, L) keeps attention inside it (0 within, -1e4 across).
        lens = packed_document_lengths(seq_len, sum_sq_len // batch_size) if sum_sq_len else [seq_len]
        pos = torch.cat([torch.arange(n) for n in lens]).expand(batch_size, -1).contiguous()
        batch = {"input_ids": ids, "segment_ids": seg, "positions": pos, "masked_positions": masked,
                 "mlm_labels": labels}
        if sum_sq_len:
            doc = torch.tensor([i for i, n in enumerate(lens) for _ in range(n)])
            mask = torch.where(doc[:, None] == doc[None, :], 0.0, -1e4)
            batch["attention_mask"] = mask.expand(batch_size, 1, seq_len, seq_len).contiguous()
        return batch
