"""A user workload that sees each iteration's real lengths: a CTC speech model.

Subclass ``seqpoint.workloads.UserWorkload``: the config's fields are the ``--set``
values; ``build_batch`` gets a ``BatchShape`` whose ``lengths``/``tgt_lengths`` are the
real per-utterance lengths the schedule recorded, so the CTC input and target lengths
are right. dtype, threads, device, compile, micro-batches and the optimizer come from
``WorkloadConfig``. From the repository root (CPU, under a minute)::

    seqpoint schedule lengths.csv --policy bucket --batch-size 8 -o s.csv
    seqpoint select s.csv -k 5 -o points.json       # points keep their real lengths
    seqpoint profile points.json --workload examples/ctc_workload.py:CTCModel \\
        --set workload.set.hidden=64 -o measurements.json
"""

from __future__ import annotations

import dataclasses

import torch

from seqpoint.workloads import BatchShape, UserWorkload, WorkloadConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class CTCConfig(WorkloadConfig):
    """A 2-layer GRU acoustic model with a CTC loss."""

    features: int = 40
    """Filterbank features per frame."""
    hidden: int = 32
    """GRU hidden size."""
    vocab: int = 29
    """Output symbols, blank (0) included."""


class CTCModel(UserWorkload):
    Config = CTCConfig

    def build_model(self) -> torch.nn.Module:
        c = self.config
        return torch.nn.ModuleDict({"rnn": torch.nn.GRU(c.features, c.hidden, 2, batch_first=True),
                                    "out": torch.nn.Linear(c.hidden, c.vocab)})

    def build_batch(self, shape: BatchShape, gen: torch.Generator) -> dict[str, torch.Tensor]:
        target_len = max(shape.tgt_len, 1)  # a schedule without targets: one symbol per utterance
        return {
            "x": torch.randn(shape.batch_size, shape.seq_len, self.config.features, generator=gen),
            "x_len": torch.as_tensor(shape.lengths),
            "y": torch.randint(1, self.config.vocab, (shape.batch_size, target_len), generator=gen),
            "y_len": torch.as_tensor(shape.tgt_lengths).clamp(1, target_len),
        }

    def compute_loss(self, model, batch):  # type: ignore[no-untyped-def]
        hidden, _ = model["rnn"](batch["x"])
        logp = model["out"](hidden).log_softmax(-1).transpose(0, 1)  # (time, batch, vocab)
        return torch.nn.functional.ctc_loss(logp, batch["y"], batch["x_len"], batch["y_len"],
                                            zero_infinity=True)
