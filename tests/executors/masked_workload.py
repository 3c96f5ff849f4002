"""A tiny user workload whose loss is a masked mean over each sequence's real length, for
executor tests (``masked_workload.py:MaskedMean``).

With ``log`` set, every real step appends one JSON line to that file: the lengths the
batch was built from, whether they were recorded (``exact``) and the masked mean of the
batch's inputs, a value fixed by the lengths and the seeded batch alone (not by the
weights), so a worker process and the serial path can be compared exactly.
"""

from __future__ import annotations

import dataclasses
import json

import torch

from seqpoint.workloads import BatchShape, UserWorkload, WorkloadConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class MaskedConfig(WorkloadConfig):
    """One linear layer, a loss averaged over the real positions only."""

    features: int = 4
    """Input features per position."""
    log: str = ""
    """File that every real step appends a JSON line to ('' logs nothing)."""


class MaskedMean(UserWorkload):
    Config = MaskedConfig

    def build_model(self) -> torch.nn.Module:
        return torch.nn.Linear(self.config.features, 1)

    def build_batch(self, shape: BatchShape, gen: torch.Generator) -> dict[str, torch.Tensor]:
        x = torch.randn(shape.batch_size, shape.seq_len, self.config.features, generator=gen)
        mask = torch.as_tensor(shape.real_mask()).float()
        lengths = torch.as_tensor(shape.lengths)
        return {"x": x, "mask": mask, "lengths": lengths, "exact": torch.tensor(shape.exact)}

    def compute_loss(self, model, batch):  # type: ignore[no-untyped-def]
        mask = batch["mask"]
        loss = (model(batch["x"]).squeeze(-1) * mask).sum() / mask.sum()
        if self.config.log and loss.device.type != "meta":
            data = (batch["x"].sum(-1) * mask).sum() / mask.sum()
            with open(self.config.log, "a") as fh:
                fh.write(json.dumps({"lengths": batch["lengths"].tolist(), "exact": bool(batch["exact"]),
                                     "data": float(data)}) + "\n")
        return loss
