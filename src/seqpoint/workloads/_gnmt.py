"""GNMT (Wu et al., 2016): the SeqPoint paper's translation model, as the MLPerf reference: an LSTM encoder (first layer
bidirectional, deeper ones residual) and decoder whose first layer attends over the encoder outputs (normalised Bahdanau
attention) and feeds ``[hidden, context]`` to the others; label-smoothed cross-entropy. ``seq_len`` is the source
length, ``tgt_len`` the target's (the source's when 0); tensors are time-major, ``(length, batch)``."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar

from seqpoint._params import Constraint, Interval
from seqpoint.workloads._base import Dims, TorchWorkload, WorkloadConfig, autocast_rnn

if TYPE_CHECKING:
    import torch

__all__ = ["GNMT", "GNMTConfig"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class GNMTConfig(WorkloadConfig):
    """Size and training settings of a GNMT workload."""

    vocab: int = 32000
    """Shared source/target vocabulary (BPE tokens)."""
    hidden: int = 1024
    """LSTM and embedding width."""
    layers: int = 4
    """Encoder layers, and decoder layers (the first decoder layer feeds the attention)."""
    dropout: float = 0.2
    """Dropout between layers."""
    label_smoothing: float = 0.1
    """Label smoothing of the cross-entropy."""
    optimizer: str = "adam"
    """``adam`` (the MLPerf recipe), ``adamw``, ``sgd`` or ``lamb``."""
    lr: float = 2e-3
    """Learning rate."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **WorkloadConfig._parameter_constraints,
        "hidden": [Interval(int, 1)],
        "vocab": [Interval(int, 2)],
        "layers": [Interval(int, 2)],
        **{key: [Interval(float, 0, 1, closed="left", word="")] for key in ("dropout", "label_smoothing")},
    }


# ``paper``: the MLPerf GNMT reference (4+4 layers of 1024, 32k BPE vocabulary).
GNMTConfig.PRESETS = {
    "tiny": GNMTConfig(vocab=128, hidden=32, layers=2, dropout=0.0, lr=3e-3),
    "small": GNMTConfig(vocab=8000, hidden=256, layers=2),
    "paper": GNMTConfig(),
}


class GNMT(TorchWorkload):
    """GNMT training step (see :class:`GNMTConfig`)."""

    family: ClassVar[str] = "gnmt"
    Config = GNMTConfig
    config: GNMTConfig

    def _build_model(self) -> torch.nn.Module:
        cfg = self.config
        import torch
        from torch import nn

        h = cfg.hidden
        State = tuple[torch.Tensor, torch.Tensor]

        class LSTM(nn.LSTM):
            """``nn.LSTM`` in the autocast dtype (:func:`autocast_rnn`)."""

            def forward(self, x: torch.Tensor, hx: State | None = None) -> tuple[torch.Tensor, State]:  # type: ignore[override]
                return autocast_rnn(self, super().forward, x, hx)  # type: ignore[no-any-return]

        class Attention(nn.Module):
            """Normalised Bahdanau attention (Salimans & Kingma weight normalisation of v)."""

            def __init__(self) -> None:
                super().__init__()
                self.q = nn.Linear(h, h, bias=False)
                self.k = nn.Linear(h, h, bias=False)
                self.v = nn.Parameter(torch.empty(h).uniform_(-0.1, 0.1))
                self.g = nn.Parameter(torch.tensor(1.0 / h**0.5))
                self.b = nn.Parameter(torch.zeros(h))

            def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
                # query (T, B, H), keys (S, B, H) -> context (T, B, H)
                q = self.q(query).transpose(0, 1).unsqueeze(2)  # (B, T, 1, H)
                k = self.k(keys).transpose(0, 1).unsqueeze(1)  # (B, 1, S, H)
                v = self.g * self.v / self.v.norm()
                scores = torch.tanh(q + k + self.b) @ v  # (B, T, S)
                probs = scores.softmax(-1)
                return torch.bmm(probs, keys.transpose(0, 1)).transpose(0, 1)

        class Model(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.src_emb = nn.Embedding(cfg.vocab, h)
                self.tgt_emb = nn.Embedding(cfg.vocab, h)
                self.enc0 = LSTM(h, h, bidirectional=True)
                self.enc = nn.ModuleList([LSTM(2 * h if i == 0 else h, h) for i in range(cfg.layers - 1)])
                self.att_rnn = LSTM(h, h)
                self.attention = Attention()
                self.dec = nn.ModuleList([LSTM(2 * h, h) for _ in range(cfg.layers - 1)])
                self.drop = nn.Dropout(cfg.dropout)
                self.classifier = nn.Linear(h, cfg.vocab)
                self.loss_fn = nn.CrossEntropyLoss(label_smoothing=cfg.label_smoothing)

            def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
                x = self.drop(self.src_emb(src))  # (S, B, H)
                x, _ = self.enc0(x)
                for i, layer in enumerate(self.enc):
                    y, _ = layer(self.drop(x))
                    x = y + x if i >= 1 else y  # residual from the third encoder layer on
                enc_out = x
                y = self.drop(self.tgt_emb(tgt_in))  # (T, B, H)
                y, _ = self.att_rnn(y)
                ctx = self.attention(y, enc_out)
                for i, layer in enumerate(self.dec):
                    z, _ = layer(self.drop(torch.cat([y, ctx], dim=-1)))
                    y = z + y if i >= 1 else z
                logits = self.classifier(y).float()
                return self.loss_fn(logits.flatten(0, 1), tgt_out.flatten())

        return Model()

    def _batch_dim(self, key: str) -> int:
        return 1  # time-major

    def _make_inputs(self, dims: Dims, gen: torch.Generator) -> dict[str, torch.Tensor]:
        import torch

        batch_size, seq_len, tgt_len, _ = dims
        t = tgt_len if tgt_len > 0 else seq_len
        v = self.config.vocab
        tgt = torch.randint(1, v, (t + 1, batch_size), generator=gen)
        return {
            "src": torch.randint(1, v, (seq_len, batch_size), generator=gen),
            "tgt_in": tgt[:-1].contiguous(),
            "tgt_out": tgt[1:].contiguous(),
        }
