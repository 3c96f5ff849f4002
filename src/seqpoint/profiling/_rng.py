"""Profiling leaves torch's global random state as it found it (:func:`keeps_torch_rng`).

A campaign steps real models (dropout draws from the global generator) in the user's own
process, e.g. from a Trainer callback. Without this the user's run after profiling would
draw other numbers (another ``group_by_length`` order, other dropout masks) than the same
run without profiling.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

__all__ = ["keeps_torch_rng", "torch_rng_kept"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


@contextlib.contextmanager
def torch_rng_kept() -> Iterator[None]:
    """Save torch's CPU generator state (and every CUDA device's, when CUDA is available)
    and restore it on exit, also when the body raises; a no-op without torch."""
    try:
        import torch
    except ImportError:
        yield
        return
    cpu = torch.get_rng_state()
    # As torch.random.fork_rng does: reading the CUDA states initialises CUDA, which also
    # applies a manual_seed the user queued before, so the saved state is the real one.
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def keeps_torch_rng(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorate ``func`` to run inside :func:`torch_rng_kept`."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with torch_rng_kept():
            return func(*args, **kwargs)

    return wrapper
