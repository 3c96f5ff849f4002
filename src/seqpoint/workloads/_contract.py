"""What a workload owes (the :class:`~seqpoint.workloads.Workload` Protocol) and the small
runtime-checkable Protocols of the optional abilities the harness uses, checked with
``isinstance``; :func:`check_workload` says which a workload has. What seqpoint learns
about a workload stays in its own side table (``seqpoint.profiling``), never on the object."""

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
    """Its step calls the model through a forward it lets the caller replace (a
    ``DistributedDataParallel`` wrapper, for a data-parallel run)."""

    model: torch.nn.Module

    def use_forward(self, forward: Callable[..., torch.Tensor]) -> None: ...


#: The optional abilities, by the name :func:`check_workload` reports.
ABILITIES: dict[str, type] = {"counts_on_meta": CountsOnMeta, "counts_parameters": CountsParameters,
                              "sets_threads": SetsThreads, "wraps_forward": WrapsForward}


def check_workload(workload: object) -> tuple[str, ...]:
    """Check that ``workload`` satisfies the Workload contract; return its optional abilities.

    Returns
    -------
    tuple of str
        The names of :data:`ABILITIES` it has, plus ``takes_batch_shape`` when its
        ``make_batch`` takes each point's real lengths.

    Raises
    ------
    ConfigError
        A required member is missing (named, with the contract).
    """
    lacks = [m for m in ("name", "config", "make_batch", "step") if not hasattr(workload, m)]
    if lacks or not isinstance(workload, Workload):
        raise ConfigError(
            f"A {type(workload).__name__} is not a workload: it lacks {', '.join(lacks) or 'callable members'} "
            "(a workload has name, config, make_batch(signature) and step(batch); see seqpoint.workloads.Workload)."
        )
    found = tuple(name for name, proto in ABILITIES.items() if isinstance(workload, proto))
    return (*found, "takes_batch_shape") if getattr(workload, "takes_batch_shape", False) is True else found
