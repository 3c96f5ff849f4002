"""What seqpoint learns about a workload object while it profiles it (:class:`WorkloadState`),
owned by its :class:`~seqpoint.profiling.Profiler`, never kept on the object: its start-up runs
once, the shapes it stepped stay warm, its meta-device clone is built once.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from seqpoint._signature import Signature
from seqpoint.workloads import TorchWorkload

__all__ = ["StartupState", "WorkloadState", "meta_clone"]


@dataclasses.dataclass(eq=False)
class StartupState:
    """What one workload object has run in this process (see ``_startup.startup_state``)."""

    seen: set[Signature] = dataclasses.field(default_factory=set)
    """Signatures stepped in this process: their first step is no longer cold."""
    primitives: tuple[int, int] | None = None
    """oneDNN primitives one step of a new shape creates and those it reuses (None: not counted)."""
    compiled: tuple[float, int] = (0.0, 0)
    """torch.compile's seconds and graphs in this process once the start-up shape's steps ran
    (``compile_clock``): that first compile belongs to the start-up, as in a validated full run."""


@dataclasses.dataclass(eq=False)
class WorkloadState:
    """seqpoint's state of one workload object in this process."""

    startup: StartupState | None = None
    """What it ran in this process, once its start-up ran."""
    counting_clone: TorchWorkload | None = None
    """Its meta-device clone, once built."""
    meta_fails: bool = False
    """Its model cannot run on the meta device (data-dependent control flow)."""
    optimizer_cost: dict[tuple[object, ...], Any] = dataclasses.field(default_factory=dict)
    """Counted cost (a ``_counting.Cost``) of its optimizer step, by the parameters' shapes."""
    exact_costs: dict[tuple[object, ...], Any] = dataclasses.field(default_factory=dict)
    """Exact per-signature costs (``_exact.exact_signature_costs``'s result), by its arguments."""
    rnn_costs: dict[tuple[object, ...], Any] = dataclasses.field(default_factory=dict)
    """A recurrent layer's counted cost by (layer, batch, width, dtype, ...): the same for every
    signature of that batch, and the slowest part of counting a step."""


def meta_clone(workload: TorchWorkload, state: WorkloadState) -> TorchWorkload | None:
    """The workload's meta-device clone, built once per ``state``; None once its model has
    failed to run there."""
    if state.meta_fails:
        return None
    if state.counting_clone is None:
        state.counting_clone = workload.counting_clone()
    return state.counting_clone
