"""What a workload may offer beside the :class:`~seqpoint.workloads.Workload` contract (small
runtime-checkable Protocols; :func:`check_workload` checks the contract and says which a
workload has), and :class:`UserWorkload`, the base class of a user's own training step that
sees each iteration's real per-sequence lengths (importing it does not import torch)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from seqpoint.exceptions import ConfigError
from seqpoint.workloads._base import TorchWorkload, Workload, WorkloadConfig
from seqpoint.workloads._shape import BatchShape

if TYPE_CHECKING:
    import torch

__all__ = ["CountsOnMeta", "CountsParameters", "SetsThreads", "UserWorkload", "WrapsForward", "check_workload"]


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


class UserWorkload(TorchWorkload):
    """A user's training step, built for each iteration from its real lengths: subclass it, set ``Config`` to a frozen
    keyword-only dataclass extending :class:`~seqpoint.workloads.WorkloadConfig` (its fields are the ``--set`` values),
    and write ``build_model(self)`` (the ``torch.nn.Module``, built under the config's seed),
    ``build_batch(self, shape, gen)`` (the CPU tensors of one batch from a :class:`BatchShape` of real lengths and a
    seeded ``torch.Generator``) and optionally ``compute_loss(self, model, batch)``. dtype, threads, device,
    ``torch.compile``, micro-batches and the optimizer are :class:`~seqpoint.workloads.TorchWorkload`'s; every tensor is
    split along dim 0 for micro-batches (override ``_split`` otherwise). Load it with
    ``--workload path/to/file.py:ClassName`` or build ``ClassName(config)`` (default ``Config()``; ``preset``: a name
    shown after the class name)."""

    takes_batch_shape: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "family" not in cls.__dict__:
            cls.family = cls.__name__  # the workload's name in results and cache rows

    def __init__(self, config: WorkloadConfig | None = None, *, preset: str | None = None) -> None:
        cfg = self.Config() if config is None else config
        if not isinstance(cfg, self.Config):
            raise ConfigError(f"{type(self).__name__} takes a {self.Config.__name__} config. Got {type(cfg).__name__}.")
        super().__init__(cfg, preset=preset)

    def build_model(self) -> torch.nn.Module:
        """The model to train (called once, under ``torch.manual_seed(config.seed)``)."""
        raise NotImplementedError(f"{type(self).__name__} must define build_model(self)")

    def build_batch(self, shape: BatchShape, gen: torch.Generator) -> dict[str, torch.Tensor]:
        """The batch tensors (on the CPU) of ``shape``; draw random values from ``gen``."""
        raise NotImplementedError(f"{type(self).__name__} must define build_batch(self, shape, gen)")

    def _build_model(self) -> torch.nn.Module:
        return self.build_model()

    def make_batch(self, signature: BatchShape | Sequence[int]) -> dict[str, torch.Tensor]:  # type: ignore[override]
        """What ``build_batch`` returns for ``signature`` (a :class:`BatchShape` of real lengths,
        or a bare signature of full-length rows), on the device; equal shapes, equal values."""
        shape = BatchShape.of(signature, workload=self.name)
        # The lengths are part of the seed: two batches of one signature with different
        # lengths differ, as in the real run.
        salt = int(shape.digest()[:15], 16) if shape.exact else 0
        return self._on_device(shape.batch_size, (*shape.signature, salt), lambda gen: self.build_batch(shape, gen))
