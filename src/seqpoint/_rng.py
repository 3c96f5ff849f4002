"""Leave the global random states as found (:func:`rngs_kept`): torch's CPU and CUDA
generators, numpy's and Python's, so a user's run after profiling or a replay in their
process draws the same numbers (dropout, ``group_by_length`` order) as without seqpoint."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["keeps_rngs", "rngs_kept"]

_F = TypeVar("_F", bound=Callable[..., Any])


@contextlib.contextmanager
def rngs_kept() -> Iterator[None]:
    """Save torch's CPU (and CUDA) generators, numpy's and Python's states; restore them on exit."""
    import numpy as np

    saved = np.random.get_state(), random.getstate()
    try:
        import torch
    except ImportError:
        torch = None  # type: ignore[assignment]
    cpu = torch.get_rng_state() if torch is not None else None
    # Only where this process already uses CUDA: reading the states initialises CUDA (a context
    # on the GPU, for a CPU campaign too), and a CUDA generator not yet made draws nothing to keep.
    cuda = torch.cuda.get_rng_state_all() if torch is not None and torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        np.random.set_state(saved[0])
        random.setstate(saved[1])
        if torch is not None:
            torch.set_rng_state(cpu)
            if cuda is not None:
                torch.cuda.set_rng_state_all(cuda)


def keeps_rngs(func: _F) -> _F:
    """Decorate ``func`` to run inside :func:`rngs_kept` (a fresh one each call)."""
    return rngs_kept()(func)
