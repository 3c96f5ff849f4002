"""The runtime-checkable Protocols of a workload's optional abilities, and
:func:`check_workload`, which checks the :class:`~seqpoint.workloads.Workload` contract and
says which abilities a workload has."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from seqpoint.exceptions import ConfigError
from seqpoint.workloads._base import Workload

if TYPE_CHECKING:
    import torch

__all__ = ["CountsOnMeta", "CountsParameters", "SetsThreads", "WrapsForward", "check_workload"]


@runtime_checkable
class CountsOnMeta(Protocol):
    """Its FLOPs and bytes can be counted on a clone on the meta device (no memory, no
    arithmetic); without it a workload is counted on one real step."""

    def counting_clone(self) -> Workload: ...


@runtime_checkable
class CountsParameters(Protocol):
    """It says how many trainable parameters it has (a data-parallel all-reduce's bytes)."""

    def n_parameters(self) -> int: ...


@runtime_checkable
class SetsThreads(Protocol):
    """It sets torch's (process-wide) thread count to its own before its steps run."""

    def apply_threads(self) -> None: ...


@runtime_checkable
class WrapsForward(Protocol):
    """Its step calls the model through a forward the caller may replace (a DDP wrapper)."""

    model: torch.nn.Module

    def use_forward(self, forward: Callable[..., torch.Tensor]) -> None: ...


#: The optional abilities, by the name :func:`check_workload` reports.
ABILITIES: dict[str, type] = {"counts_on_meta": CountsOnMeta, "counts_parameters": CountsParameters,
                              "sets_threads": SetsThreads, "wraps_forward": WrapsForward}


def check_workload(workload: object) -> tuple[str, ...]:
    """The names of the :data:`ABILITIES` ``workload`` has (and ``takes_batch_shape`` when its
    ``make_batch`` takes real lengths); ConfigError naming what it lacks of the Workload contract."""
    lacks = [m for m in ("name", "config", "make_batch", "step") if not hasattr(workload, m)]
    if lacks or not isinstance(workload, Workload):
        raise ConfigError(
            f"A {type(workload).__name__} is not a workload: it lacks {', '.join(lacks) or 'callable members'} "
            "(a workload has name, config, make_batch(signature) and step(batch); see seqpoint.workloads.Workload)."
        )
    found = tuple(name for name, proto in ABILITIES.items() if isinstance(workload, proto))
    return (*found, "takes_batch_shape") if getattr(workload, "takes_batch_shape", False) is True else found
