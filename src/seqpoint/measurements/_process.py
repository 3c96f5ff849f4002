"""The process state a step's speed depends on (:class:`ProcessState`): torch's threads, the
precision flags (TF32 and matmul precision, cuDNN's), deterministic algorithms, and the
environment the threads and the allocators read. A campaign captures it in the process that
built its workload; every worker and full-run process applies it before building its own and is
refused when it differs after; it is part of the environment fingerprint (the cache key) and is
printed with the run. torch is imported only by :meth:`ProcessState.capture` and ``apply``."""

from __future__ import annotations

import contextlib
import dataclasses
import operator
import os
from typing import Any

from seqpoint.exceptions import ConfigError

__all__ = ["ProcessState"]

#: The variables that only set a thread pool's default size: torch's pool is ``threads``.
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
#: Environment variables read when threads and allocators start (a child inherits them).
ENV = (*THREAD_ENV, "PYTORCH_CUDA_ALLOC_CONF",
       "PYTORCH_ALLOC_CONF", "CUBLAS_WORKSPACE_CONFIG", "ONEDNN_PRIMITIVE_CACHE_CAPACITY", "MALLOC_ARENA_MAX",
       "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
#: torch flags a step's kernels depend on, by their attribute path below ``torch``: the
#: ``fp32_precision`` ones (torch >= 2.9; ``allow_tf32`` and ``set_float32_matmul_precision``
#: write them) parents first, so that setting them in order restores every child.
FLAGS = ("backends.fp32_precision", "backends.cuda.matmul.fp32_precision", "backends.cudnn.fp32_precision",
         "backends.cudnn.conv.fp32_precision", "backends.cudnn.rnn.fp32_precision",
         "backends.mkldnn.fp32_precision", "backends.mkldnn.matmul.fp32_precision",
         "backends.mkldnn.conv.fp32_precision", "backends.mkldnn.rnn.fp32_precision",
         "backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
         "backends.cuda.matmul.allow_bf16_reduced_precision_reduction", "backends.cudnn.benchmark",
         "backends.cudnn.deterministic", "backends.cudnn.enabled", "backends.mkldnn.enabled")
#: Older torch, without ``fp32_precision``: what TF32 is decided by.
LEGACY = ("backends.cuda.matmul.allow_tf32", "backends.cudnn.allow_tf32")


def _read(torch: Any, path: str) -> Any:
    try:
        return operator.attrgetter(path)(torch)
    except AttributeError:  # not in this torch
        return None


def _write(torch: Any, path: str, value: object) -> None:
    owner, _, name = path.rpartition(".")
    setattr(operator.attrgetter(owner)(torch), name, value)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProcessState:
    """What a process does to a step's speed besides the step itself."""

    threads: int
    """``torch.get_num_threads()``: intra-op threads."""
    interop_threads: int
    """``torch.get_num_interop_threads()``."""
    matmul_precision: str
    """``torch.get_float32_matmul_precision()``: ``highest`` is IEEE fp32, ``high`` TF32."""
    deterministic: bool
    """``torch.are_deterministic_algorithms_enabled()``."""
    flags: tuple[tuple[str, object], ...]
    """Every flag of :data:`FLAGS` (or :data:`LEGACY`) this torch has, and its value."""
    env: tuple[tuple[str, str], ...]
    """The variables of :data:`ENV` that are set."""

    @classmethod
    def capture(cls) -> ProcessState:
        """This process's state (reading it creates no CUDA context)."""
        import torch

        paths = FLAGS if _read(torch, FLAGS[0]) is not None else LEGACY + FLAGS[9:]
        return cls(threads=torch.get_num_threads(), interop_threads=torch.get_num_interop_threads(),
                   matmul_precision=torch.get_float32_matmul_precision(),
                   deterministic=torch.are_deterministic_algorithms_enabled(),
                   flags=tuple((p, v) for p in paths if (v := _read(torch, p)) is not None),
                   env=tuple((k, os.environ[k]) for k in ENV if k in os.environ))

    def apply(self) -> None:
        """Make this process's state this one: set first in a fresh process, before the
        workload is built (the inter-op pool can only be sized before its first use)."""
        import torch

        for key in ENV:  # read by libraries loaded later in this process (and its children)
            os.environ.pop(key, None)
        os.environ.update(dict(self.env))
        torch.set_num_threads(self.threads)
        if torch.get_num_interop_threads() != self.interop_threads:
            with contextlib.suppress(RuntimeError):  # the pool already ran work: check() says so
                torch.set_num_interop_threads(self.interop_threads)
        torch.set_float32_matmul_precision(self.matmul_precision)
        for path, value in self.flags:  # after the matmul precision, which writes some of them
            _write(torch, path, value)
        torch.use_deterministic_algorithms(self.deterministic)

    def differences(self, other: ProcessState) -> list[str]:
        """What differs from ``other``, one ``name: mine (other's)`` each."""
        mine, theirs = self.to_dict(), other.to_dict()
        return [f"{k}: {mine.get(k)!r} ({theirs.get(k)!r})" for k in sorted({*mine, *theirs})
                if mine.get(k) != theirs.get(k)]

    def check(self, given: ProcessState, *, where: str) -> None:
        """ConfigError when this process's state is not the ``given`` one: its steps would run at
        another speed than the run's (and be timed as if they did not). Raised in a worker, it
        reaches the campaign as the same one line."""
        if diff := self.differences(given):
            raise ConfigError(
                f"{where} runs with another process state than the process it measures for "
                f"({'; '.join(diff)}): its steps would be timed at another speed, so it is refused. "
                "Set these before building the workload, or let the workload set them (its config's threads, "
                "dtype, cudnn_benchmark).")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProcessState:
        """The state :meth:`to_dict` wrote (a measurement environment's ``process``)."""
        return cls(threads=int(data["threads"]), interop_threads=int(data["interop_threads"]),
                   matmul_precision=str(data["matmul_precision"]), deterministic=bool(data["deterministic"]),
                   flags=tuple((k.removeprefix("torch."), v) for k, v in data.items() if k.startswith("torch.")),
                   env=tuple((k.removeprefix("env."), str(v)) for k, v in data.items() if k.startswith("env.")))

    def to_dict(self) -> dict[str, object]:
        """Plain data: part of the cache key and of ``environment.json``."""
        return {"threads": self.threads, "interop_threads": self.interop_threads,
                "matmul_precision": self.matmul_precision, "deterministic": self.deterministic,
                **{f"torch.{k}": v for k, v in self.flags}, **{f"env.{k}": v for k, v in self.env}}

    def summary(self) -> str:
        """One line of what decides a step's speed: threads, TF32, cuDNN autotuning."""
        flags = dict(self.flags)
        tf32 = self.matmul_precision != "highest" or flags.get("backends.cuda.matmul.fp32_precision") == "tf32" \
            or flags.get("backends.cuda.matmul.allow_tf32") is True
        bench = "on" if flags.get("backends.cudnn.benchmark") else "off"
        return (f"{self.threads} thread{'s' * (self.threads != 1)}, matmul precision {self.matmul_precision} "
                f"(TF32 matmuls {'on' if tf32 else 'off'}), cuDNN autotuning {bench}"
                + (", deterministic algorithms" if self.deterministic else ""))
