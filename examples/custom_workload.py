"""A user workload for seqpoint: any model, as ``module:function``.

    seqpoint profile SEQPOINTS.json --workload examples/custom_workload.py:build \
        --set workload.set.hidden=64 -o MEASUREMENTS.json

``build(**overrides)`` returns an object with ``name``, ``config``,
``make_batch(signature)`` and ``step(batch)``: one full training iteration (forward,
loss, backward, optimizer step) for a batch of the signature's shape.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn


@dataclass(frozen=True, kw_only=True)
class TaggerConfig:
    """A small bidirectional-GRU sequence tagger."""

    vocab: int = 1000
    """Input vocabulary."""
    hidden: int = 32
    """GRU hidden size."""
    tags: int = 16
    """Output classes per token."""
    threads: int = 1
    """CPU threads."""
    seed: int = 0
    """Seed of weights and batches."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Tagger:
    """The Workload protocol: ``make_batch(signature)`` and ``step(batch)``."""

    def __init__(self, config: TaggerConfig) -> None:
        torch.set_num_threads(config.threads)
        torch.manual_seed(config.seed)
        self.name = "custom-tagger"
        self.config = config
        self.embed = nn.Embedding(config.vocab, config.hidden)
        self.rnn = nn.GRU(config.hidden, config.hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * config.hidden, config.tags)
        params = [*self.embed.parameters(), *self.rnn.parameters(), *self.out.parameters()]
        self.optimizer = torch.optim.AdamW(params, lr=1e-3)

    def make_batch(self, signature: tuple[int, ...]) -> dict[str, torch.Tensor]:
        batch_size, seq_len = int(signature[0]), int(signature[1])
        g = torch.Generator().manual_seed(self.config.seed + 7919 * seq_len + batch_size)
        return {
            "tokens": torch.randint(self.config.vocab, (batch_size, seq_len), generator=g),
            "tags": torch.randint(self.config.tags, (batch_size, seq_len), generator=g),
        }

    def step(self, batch: dict[str, torch.Tensor]) -> float:
        self.optimizer.zero_grad(set_to_none=True)
        hidden, _ = self.rnn(self.embed(batch["tokens"]))
        logits = self.out(hidden)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), batch["tags"].flatten())
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())


def build(**overrides: Any) -> Tagger:
    """Entry point named on the command line; ``--set workload.set.KEY=VALUE`` arrive as strings."""
    fields = TaggerConfig.__dataclass_fields__
    typed = {k: int(v) if fields[k].type in ("int", int) else v for k, v in overrides.items()}
    return Tagger(TaggerConfig(**typed))
