"""What the harness does when a point fails or cannot fit.

A failed point is recorded, an out-of-memory error told from any other, and the workload left
fit to measure the next point. Allocating a shape far past the machine's memory can take the
process (or the machine) down instead of raising, so a point whose lower bound of a step's
memory (parameters, their gradients, the optimizer's own copies of them and the input batch,
counted on the meta-device clone) exceeds the memory free for it is recorded as ``oom``
without running. It never refuses a point that fits.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import operator
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from seqpoint._signature import Signature, signature_fields
from seqpoint.measurements import Measurement, Status
from seqpoint.profiling._state import WorkloadState, meta_clone
from seqpoint.workloads import CountsOnMeta, TorchWorkload, Trains, Workload

__all__ = ["CudaLost", "available_memory", "failed_measurement", "guarded", "is_oom", "memory_refusal", "name_of",
           "parked", "step_memory_lower_bound"]


def name_of(workload: Workload) -> str:
    """The workload's name for records and messages (its class name when it has none)."""
    return str(getattr(workload, "name", type(workload).__name__))


def failed_measurement(signature: Sequence[int], why: BaseException | str, *, status: Status = "error") -> Measurement:
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
    return isinstance(exc, RuntimeError) and any(w in str(exc).lower() for w in _OOM_WORDS)


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


def available_memory(device: str) -> int | None:
    """Bytes a step may use on ``device``: CUDA memory free plus what this process's allocator
    holds (it reuses that), else available RAM (None if unknown)."""
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            return None
        index = torch.device(device).index or 0
        return int(torch.cuda.mem_get_info(index)[0] + torch.cuda.memory_reserved(index))
    with contextlib.suppress(OSError), open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _tensor_bytes(obj: object) -> int:
    if hasattr(obj, "numel") and hasattr(obj, "element_size"):
        return int(obj.numel()) * int(obj.element_size())
    if isinstance(obj, dict):
        return sum(_tensor_bytes(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return sum(_tensor_bytes(v) for v in obj)
    return 0


def state_copies(optimizer: object) -> int:
    """Copies of the parameters a step holds at least: weights and gradients, plus the
    optimizer's state per parameter (SGD's momentum buffer, Adam's and LAMB's two moments)."""
    name = type(optimizer).__name__.lower()
    if name.startswith(("adam", "lamb")):
        return 4
    groups = getattr(optimizer, "param_groups", [{}])
    return 3 if name == "sgd" and any(g.get("momentum", 0) for g in groups) else 2


def step_memory_lower_bound(clone: TorchWorkload, signature: Signature) -> int:
    """Bytes one training step of ``signature`` holds at least, from a meta-device ``clone``."""
    params = sum(_tensor_bytes(p) for p in clone.model.parameters())
    return state_copies(clone.optimizer) * params + _tensor_bytes(clone.make_batch(signature))


def memory_refusal(workload: Workload, device: str, state: WorkloadState, signature: Signature) -> str | None:
    """The ``oom`` message for a point that cannot fit on ``device`` (counted on the meta-device
    clone of ``state``), or None when it may (or when nothing is known: a workload without a
    meta-device clone refuses nothing)."""
    if not isinstance(workload, CountsOnMeta) or not isinstance(workload, TorchWorkload):
        return None
    limit = available_memory(device)
    if limit is None:
        return None
    try:
        clone = meta_clone(workload, state)
        if clone is None:
            return None
        need = step_memory_lower_bound(clone, signature)
    # The meta device lacks a kernel (NotImplementedError) or a value (RuntimeError), or
    # the clone rejects the shape (ValueError): the real step runs and reports its own.
    except (RuntimeError, NotImplementedError, ValueError):
        return None
    if need <= limit:
        return None
    return (f"not run: a step of {signature} needs at least {need / 2**30:.1f} GiB (parameters, gradients, "
            f"optimizer state and inputs, counted on the meta device), more than the {limit / 2**30:.1f} GiB "
            f"free on {device}.")


@contextlib.contextmanager
def parked(workload: Workload) -> Iterator[None]:
    """This process's copy of a CUDA workload (its model's parameters and buffers, its optimizer's
    state) in host memory, and the allocator's cache and cuBLAS's workspaces given back, while fresh
    processes time it: they get the GPU's memory as a run would, not less this copy (audit row 3).
    Back on their devices after, storage by storage: parameters keep their identity (the
    optimizer's references hold), views keep sharing (cuDNN's flattened RNN weights stay one
    chunk) and the copy takes the memory it took; gradients are dropped (every step sets them)."""
    import torch

    hosts: dict[tuple[int, int], Any] = {}  # a GPU storage's (address, size) -> its host copy
    moved: list[tuple[Callable[[Any], None], torch.Tensor, torch.device, tuple[int, int] | None]] = []

    def park(tensor: object, put: Callable[[Any], None]) -> None:
        if not (isinstance(tensor, torch.Tensor) and tensor.is_cuda):
            return
        key, storage = None, None
        if tensor.layout == torch.strided:
            # A subclass holding other tensors (DTensor, some float8 weights) has no storage of its own.
            with contextlib.suppress(RuntimeError, NotImplementedError):
                storage = tensor.untyped_storage()
        if storage is None:  # a plain copy
            host = tensor.to("cpu")
        else:
            key = (storage.data_ptr(), storage.nbytes())
            if key not in hosts:
                hosts[key] = storage.cpu()
            host = torch.empty(0, dtype=tensor.dtype).set_(hosts[key], tensor.storage_offset(), tensor.size(),
                                                            tensor.stride())
        moved.append((put, host, tensor.device, key))
        put(host)

    try:  # what moved goes back, also when parking the rest failed
        model = getattr(workload, "model", None)
        if isinstance(model, torch.nn.Module):
            for p in model.parameters():
                p.grad = None
                park(p.data, functools.partial(setattr, p, "data"))
            for name, buf in model.named_buffers():
                owner, _, leaf = name.rpartition(".")
                park(buf, functools.partial(setattr, model.get_submodule(owner), leaf))
        optimizer = getattr(workload, "optimizer", None)
        for state in getattr(getattr(optimizer, "optimizer", optimizer), "state", {}).values():
            for key, value in list(state.items()):
                park(value, functools.partial(operator.setitem, state, key))
        if moved:
            getattr(torch._C, "_cuda_clearCublasWorkspaces", lambda: None)()  # 32 MiB or more each
            torch.cuda.empty_cache()
        yield
    finally:
        back: dict[tuple[int, int], Any] = {}
        for put, host, device, key in moved:
            if key is None:
                put(host.to(device))
                continue
            if key not in back:
                back[key] = torch.UntypedStorage(hosts[key].nbytes(), device=device).copy_(hosts[key])
            put(torch.empty(0, dtype=host.dtype, device=device).set_(back[key], host.storage_offset(), host.size(),
                                                                     host.stride()))
