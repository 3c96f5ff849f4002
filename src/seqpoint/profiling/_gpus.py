"""Peak compute and memory bandwidth of named GPUs, for roofline estimates (torch-free)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GPU_SPECS", "GPUSpec"]


@dataclass(frozen=True, kw_only=True)
class GPUSpec:
    """Dense (no sparsity) peak throughput of one GPU, from the vendor's data sheet."""

    peak_flops: dict[str, float]
    """Peak FLOP/s per workload dtype (``fp32`` without TF32, ``bf16``/``fp16`` tensor cores)."""
    bandwidth: float
    """HBM bandwidth, bytes/s."""
    name: str
    """Marketing name and form factor."""

    def flops_for(self, dtype: str) -> float:
        """Peak FLOP/s for a workload dtype (falls back to fp16 when bf16 is unsupported)."""
        return self.peak_flops.get(dtype, self.peak_flops["fp16"])


GPU_SPECS: dict[str, GPUSpec] = {
    # NVIDIA Tesla V100 SXM2 data sheet (2018): 15.7 TFLOPS FP32, 125 TFLOPS tensor (FP16),
    # 900 GB/s HBM2. V100 has no bf16: bf16 falls back to the fp16 tensor-core peak.
    "v100": GPUSpec(name="V100 SXM2", peak_flops={"fp32": 15.7e12, "fp16": 125e12}, bandwidth=900e9),
    # NVIDIA A100 Tensor Core GPU data sheet (80GB SXM): 19.5 TFLOPS FP32, 312 TFLOPS
    # BF16/FP16 tensor (dense), 2,039 GB/s HBM2e.
    "a100": GPUSpec(name="A100 80GB SXM", peak_flops={"fp32": 19.5e12, "bf16": 312e12, "fp16": 312e12},
                    bandwidth=2039e9),
    # NVIDIA H100 Tensor Core GPU data sheet (SXM5): 67 TFLOPS FP32, 989.4 TFLOPS
    # BF16/FP16 tensor (dense; 1,979 with sparsity), 3.35 TB/s HBM3.
    "h100": GPUSpec(name="H100 SXM5", peak_flops={"fp32": 67e12, "bf16": 989.4e12, "fp16": 989.4e12},
                    bandwidth=3.35e12),
}

