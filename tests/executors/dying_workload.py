"""A user workload (``dying_workload:build``) whose process dies once, for executor tests.

It is ``deepspeech2:tiny`` except that stepping the signature ``die_at`` kills its own
process with SIGKILL the first time (a marker file remembers it), as the out-of-memory
killer or a lost node would.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from seqpoint.workloads import Workload, load_workload


class DyingWorkload:
    def __init__(self, marker: str, die_at: str) -> None:
        self._inner = load_workload("deepspeech2:tiny")
        self._marker = Path(marker)
        self._die_at = tuple(int(v) for v in die_at.split(","))
        self._current: tuple[int, ...] = ()
        self.name = self._inner.name
        self.config = self._inner.config

    def __getattr__(self, name: str) -> Any:  # device, counting_clone, warmup_signature ...
        return getattr(self._inner, name)

    def make_batch(self, signature: tuple[int, ...]) -> Any:
        self._current = tuple(int(v) for v in signature)
        return self._inner.make_batch(signature)

    def step(self, batch: Any) -> float:
        if self._current == self._die_at and not self._marker.exists():
            self._marker.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return self._inner.step(batch)


def build(marker: str, die_at: str) -> Workload:
    return DyingWorkload(marker, die_at)
