"""What the harness does when a point fails: tell an out-of-memory error from any other,
and leave the workload fit to measure the next point."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

from seqpoint._signature import signature_fields
from seqpoint.measurements import Measurement, Status
from seqpoint.workloads import Trains, Workload

__all__ = ["CudaLost", "failed_measurement", "guarded", "is_oom", "name_of"]


def name_of(workload: Workload) -> str:
    """The workload's name for records and messages (its class name when it has none)."""
    return str(getattr(workload, "name", type(workload).__name__))


def failed_measurement(signature: Sequence[int], why: BaseException | str, *,
                       status: Status = "error") -> Measurement:
    """The record of a point that could not be measured: its status (``oom`` for an
    out-of-memory exception) and the first line of why."""
    if isinstance(why, BaseException):
        status = "oom" if is_oom(why) else status
        why = f"{type(why).__name__}: {why}"
    return Measurement(**signature_fields(signature), status=status, message=(why.strip().splitlines() or [""])[0][:500])


#: What an allocation that failed says, in the words of the CPU allocator, oneDNN, cuBLAS and cuDNN.
_OOM_WORDS = ("out of memory", "can't allocate memory", "failed to allocate", "cublas_status_alloc_failed",
              "cudnn_status_alloc_failed")


def is_oom(exc: BaseException) -> bool:
    """True for out-of-memory errors: ``MemoryError``, ``torch.OutOfMemoryError`` and a
    ``RuntimeError`` saying an allocation failed (:data:`_OOM_WORDS`)."""
    torch = sys.modules.get("torch")  # a torch error needs torch imported
    if isinstance(exc, MemoryError) or (torch is not None and isinstance(exc, torch.OutOfMemoryError)):
        return True
    msg = str(exc).lower()
    return isinstance(exc, RuntimeError) and any(w in msg for w in _OOM_WORDS)


T = TypeVar("T")


class CudaLost(RuntimeError):
    """The process's CUDA context is lost: its later points cannot be measured here."""


def guarded(workload: Workload, signature: Sequence[int], fn: Callable[[], T], *,
            reraise: tuple[type[BaseException], ...] = ()) -> T | Measurement:
    """``fn()`` (a step of ``workload``), or the record of its failure at ``signature`` after
    freeing what the failed step left; ``reraise`` goes through (seqpoint's own errors).
    Raises CudaLost when the failure left the process's CUDA context unusable (a sticky error:
    an illegal address, a device-side assert poisons the context)."""
    try:
        return fn()
    except reraise:
        raise
    except Exception as exc:  # a user's step may raise anything: the point records it, the campaign goes on
        failed = failed_measurement(signature, exc)
    torch = sys.modules.get("torch")  # not imported: no CUDA to check or free
    if torch is not None and torch.cuda.is_initialized():
        try:
            torch.cuda.synchronize()
        except RuntimeError as exc:
            lost = (str(exc).strip().splitlines() or ["a CUDA error"])[0]
            raise CudaLost(f"the process's CUDA context was lost at {tuple(signature)} ({failed.message}; "
                           f"then: {lost})") from None
    # Freed after the except block, whose traceback holds the failed step's activations: left,
    # they (and gradients, cached device blocks) could fail the next, smaller point for want of memory.
    if isinstance(workload, Trains):
        workload.optimizer.zero_grad(set_to_none=True)
    gc.collect()
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
    return failed
