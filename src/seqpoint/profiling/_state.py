"""What seqpoint learns about a workload object while it profiles it (:class:`WorkloadState`),
owned by its :class:`~seqpoint.profiling.Profiler`, never kept on the object: its start-up runs
once, the shapes it stepped stay warm, its meta-device clone is built once.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any

from seqpoint.workloads import Signature, TorchWorkload

__all__ = ["StartupState", "WorkloadState", "meta_clone", "state_of"]


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


#: id of a live workload object -> (a weak reference to it, its state).
_STATES: dict[int, tuple[weakref.ref[object], WorkloadState]] = {}


def state_of(workload: object) -> WorkloadState | None:
    """The state of ``workload`` in this process (created empty the first time); None for an
    object that cannot be weakly referenced (its steps are then not told apart)."""
    key = id(workload)
    found = _STATES.get(key)
    if found is not None and found[0]() is workload:
        return found[1]
    try:
        ref = weakref.ref(workload, lambda _, key=key: _STATES.pop(key, None))  # type: ignore[misc]
    except TypeError:
        return None
    state = WorkloadState()
    _STATES[key] = (ref, state)
    return state


def meta_clone(workload: TorchWorkload) -> TorchWorkload | None:
    """The workload's meta-device clone, built once per object; None once its model has
    failed to run there."""
    kept = state_of(workload)
    if kept is None:
        return workload.counting_clone()
    if kept.meta_fails:
        return None
    if kept.counting_clone is None:
        kept.counting_clone = workload.counting_clone()
    return kept.counting_clone
