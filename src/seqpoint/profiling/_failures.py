"""What the harness does when a point fails: tell an out-of-memory error from any other,
and leave the workload fit to measure the next point."""

from __future__ import annotations

import gc

from seqpoint.workloads import Workload

__all__ = ["cleanup_after_failure", "is_oom"]


def is_oom(exc: BaseException) -> bool:
    """True for out-of-memory errors (CUDA or host).

    Parameters
    ----------
    exc : BaseException
        What a training step raised.

    Returns
    -------
    bool
        True for ``MemoryError``, ``torch.OutOfMemoryError`` and a ``RuntimeError`` whose
        message says an allocation failed (oneDNN and the CPU allocator word it so).
    """
    if isinstance(exc, MemoryError):
        return True
    try:
        import torch

        if isinstance(exc, torch.OutOfMemoryError):
            return True
    except ImportError:  # pragma: no cover
        pass
    msg = str(exc).lower()
    return isinstance(exc, RuntimeError) and (
        "out of memory" in msg or "can't allocate memory" in msg or "failed to allocate" in msg
    )


def cleanup_after_failure(workload: Workload) -> None:
    """Free what a failed step left behind (gradients, cached device blocks).

    A step that ran out of memory part way holds gradients and the allocator's cached
    blocks; without this the next, smaller point could fail for want of that memory.
    """
    opt = getattr(workload, "optimizer", None)
    if opt is not None:
        opt.zero_grad(set_to_none=True)
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover
        pass
