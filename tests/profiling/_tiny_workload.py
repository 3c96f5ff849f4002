"""A tiny masked-LM ``UserWorkload`` whose ``build_batch`` logs the real lengths it got and
its process id (``log``, a JSON-lines file), so a test sees what reached worker processes.
Tests import it, copy it beside a workload file, or paste it into a script."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import torch

from seqpoint.workloads import BatchShape, UserWorkload, WorkloadConfig


@dataclasses.dataclass(frozen=True, kw_only=True)
class TinyConfig(WorkloadConfig):
    width: int = 8
    """Embedding width."""
    log: str = ""
    """JSON-lines file of the exact shapes ``build_batch`` got ("" logs nothing)."""


class _Net(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.emb, self.out = torch.nn.Embedding(50, width), torch.nn.Linear(width, 50)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        logits = self.out(self.emb(ids)).reshape(-1, 50)
        loss = torch.nn.functional.cross_entropy(logits, ids.reshape(-1), reduction="none")
        return (loss * mask.reshape(-1)).sum() / mask.sum()


class Tiny(UserWorkload):
    Config = TinyConfig

    def build_model(self) -> torch.nn.Module:
        return _Net(self.config.width)  # type: ignore[attr-defined]

    def build_batch(self, shape: BatchShape, gen: torch.Generator) -> dict[str, Any]:
        log = self.config.log  # type: ignore[attr-defined]
        if log and shape.exact:
            with open(log, "a") as fh:
                fh.write(json.dumps({"pid": os.getpid(), "lengths": shape.lengths.tolist()}) + "\n")
        ids = torch.randint(0, 50, (shape.batch_size, shape.seq_len), generator=gen)
        return {"ids": ids, "mask": torch.from_numpy(shape.real_mask()).float()}
