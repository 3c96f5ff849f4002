"""The device model: the seconds one operator takes on a GPU, from its counted FLOPs and bytes.

A matrix product (GEMM, batched GEMM, attention, convolution, a recurrent layer's products)
takes ``((F' / (f_c P))^p + (B / (f_b W))^p)^(1/p) + k o``: ``P`` the peak FLOP/s of the
precision it runs at (:meth:`GPUSpec.peak`: TF32 where cuBLAS or cuDNN use it, bf16/fp16 on
tensor cores), ``W`` the memory bandwidth, ``F'`` its FLOPs with the output's rows and columns
rounded up to the tile ``T`` (a kernel computes whole tiles), ``k`` its kernels and ``o`` what
one kernel costs beyond its work (launch, ramp-up, tail). Every other operator is bound by
memory: ``B / (f_m W) + k o``. ``p`` joins the two times: a kernel near the ridge reaches
neither bound (``p = ∞`` is the roofline's maximum, ``p = 1`` their sum).

The six constants of :data:`MODEL` are fitted on per-operation measurements only (Vidur's
tables of Llama-2-7B's layer operators on an A40 and an A100; ``benchmarks/bench_device_model.py
--fit`` refits them): the H100's table and every published whole-model figure are checks.
:data:`ROOFLINE` is the same formula with every fraction 1, no tile, no kernel cost and
``p = ∞``: the bound, ``max(F / P, B / W)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from seqpoint.devices._specs import PRECISIONS, GPUSpec

__all__ = ["MODEL", "ROOFLINE", "DeviceModel", "Target", "model_band"]


@dataclass(frozen=True, kw_only=True)
class DeviceModel:
    """How far below its data sheet a GPU runs each kind of operator (see the module docstring)."""

    matmul: float
    """Fraction of the precision's peak FLOP/s a matrix product reaches (``f_c``)."""
    matmul_memory: float
    """Fraction of the bandwidth a matrix product streams its operands at (``f_b``)."""
    memory: float
    """Fraction of the bandwidth a memory-bound operator reaches (``f_m``)."""
    kernel_s: float
    """Seconds each kernel costs beyond its roofline (``o``)."""
    overlap: float
    """Exponent ``p`` joining compute and memory time (``math.inf``: their maximum)."""
    tile: int
    """Rows and columns of a product's output are rounded up to a multiple of this (``T``)."""
    error: float
    """Relative error of a modeled step time: the worst, over every num_tokens, of a held-out
    GPU's per-operation table (the interval's band)."""
    ratio_error: float
    """Relative error of a modeled ratio between two GPUs, measured the same way."""

    def seconds(self, peak: float, bandwidth: float, flops: float, nbytes: float, kernels: float = 1.0,
                shape: tuple[int, int] | None = None) -> float:
        """One operator's seconds at ``peak`` FLOP/s and ``bandwidth`` bytes/s; a matrix product
        (``flops > 0``) has its output's ``shape`` (rows, columns) rounded up to the tile."""
        f, fb = (self.matmul, self.matmul_memory) if flops > 0 else (self.memory, self.memory)
        if flops > 0 and shape is not None and self.tile > 1:
            flops *= math.prod(-(-max(d, 1) // self.tile) * self.tile / max(d, 1) for d in shape)
        compute, memory = flops / (f * peak), nbytes / (fb * bandwidth)
        p = self.overlap
        joined = max(compute, memory) if math.isinf(p) else (compute**p + memory**p) ** (1.0 / p)
        return joined + kernels * self.kernel_s


#: The roofline bound: every fraction 1, no tile, no kernel cost, the maximum of the two times.
ROOFLINE = DeviceModel(matmul=1.0, matmul_memory=1.0, memory=1.0, kernel_s=0.0, overlap=math.inf, tile=1,
                       error=0.0, ratio_error=0.0)

#: The device model, fitted on Vidur's A40 and A100 per-operation tables (``bench_device_model.py
#: --fit``; benchmarks/RESULTS.md, "Device model"); ``error`` and ``ratio_error`` are the held-out
#: H100's worst, over 1 to 4,096 tokens, of its layer's time (14.6%) and of its speedup over the A100 (23.6%).
MODEL = DeviceModel(matmul=0.7302, matmul_memory=0.8321, memory=0.6353, kernel_s=3.128e-6, overlap=1.869, tile=64,
                    error=0.15, ratio_error=0.24)


@dataclass(frozen=True)
class Target:
    """A device as counting times a step on it: peak FLOP/s per precision, bandwidth, and the
    model that turns an operator's counts into seconds (the bound, or :data:`MODEL`)."""

    peaks: tuple[tuple[str, float], ...]
    """``(precision, FLOP/s)`` for every precision the device runs."""
    bandwidth: float
    """Memory bandwidth, bytes/s."""
    model: DeviceModel = ROOFLINE
    """:data:`ROOFLINE` or :data:`MODEL`."""

    @classmethod
    def of(cls, spec: GPUSpec, model: DeviceModel = ROOFLINE) -> Target:
        """The GPU of a device file, at every precision it runs natively."""
        return cls(tuple((p, spec.peak(p)) for p in PRECISIONS if spec.supports(p)), spec.bandwidth, model)

    @classmethod
    def flat(cls, flops: float, bandwidth: float) -> Target:
        """A device with one peak for every precision (this machine's CPU, measured)."""
        return cls(tuple((p, flops) for p in PRECISIONS), bandwidth)

    def peak(self, precision: str | None) -> float:
        """Peak FLOP/s at ``precision`` (None: an operator without tensor-core math, at fp32)."""
        return dict(self.peaks)[precision or "fp32"]

    def seconds(self, precision: str | None, flops: float, nbytes: float, kernels: float = 1.0,
                shape: tuple[int, int] | None = None) -> float:
        """One operator's seconds on this device (:meth:`DeviceModel.seconds`)."""
        return self.model.seconds(self.peak(precision), self.bandwidth, flops, nbytes, kernels, shape)


def model_band(metric: str) -> float:
    """Relative half-width the device model's own error adds to a projected metric:
    :data:`MODEL`'s ``error`` for ``model_<gpu>_s``, else 0."""
    return MODEL.error if metric.startswith("model_") else 0.0
