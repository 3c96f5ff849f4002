"""A user workload (module:function) that runs out of memory above a sequence length."""

from __future__ import annotations

import time
from typing import Any


class OOMAbove:
    name = "oom-above"

    def __init__(self, limit: int) -> None:
        self.config = {"limit": limit}
        self.limit = limit

    def make_batch(self, signature: tuple[int, ...]) -> tuple[int, ...]:
        return signature

    def step(self, batch: Any) -> float:
        if batch[1] > self.limit:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (simulated)")
        time.sleep(1e-5 * batch[0] * batch[1])
        return 0.0


def build(limit: str = "1200") -> OOMAbove:
    return OOMAbove(int(limit))
