"""Toy inputs for tests of seqpoint and of code built on it (like ``torch.testing``), each small,
deterministic and exact by hand: a schedule of eight iterations, SeqPoints at chosen rows,
measurements from a cost function, and a training step small enough to profile in a test.
Importing this module does not import torch; the workload's methods do."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from seqpoint._signature import signature_fields
from seqpoint.measurements import Measurement, Measurements, Status
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoint, SeqPoints
from seqpoint.workloads import BatchShape, UserWorkload, WorkloadConfig

if TYPE_CHECKING:
    import torch

__all__ = ["ToyConfig", "ToyWorkload", "linear_cost", "toy_measurements", "toy_points", "toy_schedule",
           "varied_schedule"]


def toy_schedule(seq_len: Sequence[int] = (10, 10, 10, 20, 20, 30, 100, 100), *, batch_size: int = 1,
                 tgt_len: Sequence[int] | None = None) -> IterationSchedule:
    """A schedule of one iteration per ``seq_len``; by default eight iterations of batch 1:
    seq_len 10 ×3, 20 ×2, 30 ×1, 100 ×2."""
    cols: dict[str, object] = {"batch_size": [batch_size] * len(seq_len), "seq_len": list(seq_len)}
    if tgt_len is not None:
        cols["tgt_len"] = list(tgt_len)
    return IterationSchedule.from_columns(cols)


def varied_schedule(n: int = 4000, *, seed: int = 7) -> IterationSchedule:
    """``n`` iterations whose batch size, source and target lengths all vary (token-budget
    style: the batch size shrinks as the sequences grow)."""
    rng = np.random.default_rng(seed)
    sl = rng.integers(5, 120, n)
    bs = np.maximum(1, 4000 // sl) // 8 * 8 + 8
    tl = (sl * rng.uniform(0.8, 1.3, n)).astype(np.int64)
    return IterationSchedule.from_columns({"batch_size": bs, "seq_len": sl, "tgt_len": tl})


def toy_points(schedule: IterationSchedule, rows: Sequence[int], *, method: str = "toy") -> SeqPoints:
    """SeqPoints at the iterations ``rows`` of ``schedule``, each weighing ``len(schedule) /
    len(rows)`` iterations."""
    weight = len(schedule) / len(rows)
    return SeqPoints(method=method, n_iterations=len(schedule),
                     points=tuple(SeqPoint.from_row(schedule, r, weight, lengths=False) for r in rows))


def linear_cost(point: SeqPoint) -> float:
    """Seconds of a step linear in its padded tokens: ``0.5 + 0.01 · batch_size · (seq_len + tgt_len)``."""
    return 0.5 + 0.01 * point.batch_size * (point.seq_len + point.tgt_len)


def toy_measurements(points: SeqPoints | Sequence[SeqPoint], cost: Callable[[SeqPoint], float] = linear_cost, *,
                     metric: str = "time_s", status: Status = "ok", workload: str = "toy",
                     **metrics: Callable[[SeqPoint], float]) -> Measurements:
    """One measurement per point: ``metric`` is ``cost(point)`` and each keyword metric its
    function of the point (``time_s_iqr=lambda p: 0.0``); a failed ``status`` has no metrics."""
    pts = points.points if isinstance(points, SeqPoints) else tuple(points)
    funcs = {metric: cost, **metrics}
    return Measurements(workload=workload, measurements=tuple(
        Measurement(iteration=p.iteration, **signature_fields(p.signature), status=status,
                    message="" if status == "ok" else status,
                    metrics={k: float(f(p)) for k, f in funcs.items()} if status == "ok" else {})
        for p in pts))


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToyConfig(WorkloadConfig):
    """A tiny masked language model."""

    width: int = 8
    """Embedding width."""
    log: str = ""
    """JSON-lines file that ``build_batch`` appends each exact shape's lengths and process id
    to ("" logs nothing), so a test sees what reached a worker process."""


class ToyWorkload(UserWorkload):
    """A masked language model of 50 tokens: an embedding and a linear layer, the loss averaged
    over each sequence's real positions. Profiling it takes milliseconds."""

    Config = ToyConfig
    config: ToyConfig

    def build_model(self) -> torch.nn.Module:
        import torch

        return torch.nn.Sequential(torch.nn.Embedding(50, self.config.width), torch.nn.Linear(self.config.width, 50))

    def build_batch(self, shape: BatchShape, gen: torch.Generator) -> dict[str, torch.Tensor]:
        import torch

        if self.config.log and shape.exact:
            with open(self.config.log, "a") as fh:
                fh.write(json.dumps({"pid": os.getpid(), "lengths": shape.lengths.tolist()}) + "\n")
        ids = torch.randint(0, 50, (shape.batch_size, shape.seq_len), generator=gen)
        return {"ids": ids, "mask": torch.from_numpy(shape.real_mask()).float()}

    def compute_loss(self, model: Callable[..., torch.Tensor], batch: dict[str, torch.Tensor]) -> torch.Tensor:
        import torch

        ids, mask = batch["ids"], batch["mask"]
        logits = model(ids).reshape(-1, 50)
        loss = torch.nn.functional.cross_entropy(logits, ids.reshape(-1), reduction="none")
        return (loss * mask.reshape(-1)).sum() / mask.sum()
