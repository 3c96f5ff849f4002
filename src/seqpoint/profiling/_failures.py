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

__all__ = ["cleanup_after_failure", "failed_measurement", "guarded", "is_oom", "name_of"]


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


def is_oom(exc: BaseException) -> bool:
    """True for out-of-memory errors: ``MemoryError``, ``torch.OutOfMemoryError`` and a
    ``RuntimeError`` saying an allocation failed (oneDNN and the CPU allocator word it so)."""
    torch = sys.modules.get("torch")  # a torch error needs torch imported
    if isinstance(exc, MemoryError) or (torch is not None and isinstance(exc, torch.OutOfMemoryError)):
        return True
    msg = str(exc).lower()
    return isinstance(exc, RuntimeError) and (
        "out of memory" in msg or "can't allocate memory" in msg or "failed to allocate" in msg
    )


def cleanup_after_failure(workload: Workload) -> None:
    """Free what a failed step left behind (gradients, cached device blocks), without which
    the next, smaller point could fail for want of that memory."""
    if isinstance(workload, Trains):
        workload.optimizer.zero_grad(set_to_none=True)
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


T = TypeVar("T")


def guarded(workload: Workload, signature: Sequence[int], fn: Callable[[], T], *,
            reraise: tuple[type[BaseException], ...] = ()) -> T | Measurement:
    """``fn()`` (a step of ``workload``), or the record of its failure at ``signature`` after
    freeing what the failed step left; ``reraise`` goes through (seqpoint's own errors)."""
    try:
        return fn()
    except reraise:
        raise
    except Exception as exc:  # a user's step may raise anything: the point records it, the campaign goes on
        cleanup_after_failure(workload)
        return failed_measurement(signature, exc)
