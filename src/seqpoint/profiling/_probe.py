"""Peak FLOP/s and memory bandwidth of this machine's CPU, for a roofline: the best of a few
``1024×1024`` fp32 matrix products and of a few copies of a 64 MiB tensor, rounded to two
significant figures so that the same machine gives the same cost proxy from run to run.
"""

from __future__ import annotations

import math
import time

__all__ = ["cpu_roofline"]


def _two_figures(x: float) -> float:
    if x <= 0 or not math.isfinite(x):
        return x
    e = math.floor(math.log10(x)) - 1
    return round(x / 10**e) * 10**e


def cpu_roofline(*, repeats: int = 5) -> tuple[float, float]:
    """``(peak FLOP/s, bandwidth bytes/s)`` of this process's CPU threads, measured: the fastest
    (least disturbed) of ``repeats`` timed runs of each kernel."""
    import torch

    n = 1024
    a, b = torch.randn(n, n), torch.randn(n, n)
    src = torch.empty(16 * 1024 * 1024)  # 64 MiB of fp32
    dst = torch.empty_like(src)
    torch.mm(a, b)
    dst.copy_(src)
    best_mm = best_copy = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best_mm = min(best_mm, time.perf_counter() - t0)
        t0 = time.perf_counter()
        dst.copy_(src)
        best_copy = min(best_copy, time.perf_counter() - t0)
    flops = 2.0 * n**3 / best_mm
    bandwidth = 2.0 * src.numel() * src.element_size() / best_copy
    return _two_figures(flops), _two_figures(bandwidth)
