"""Does the FLOP count see every operator that takes time? A check of one real step.

A timed operator nobody counts makes every FLOP total silently short (a Conformer's came out
11.2% short). An operator is **uncounted** when it takes at least ``min_share`` of the
step's operator time; is compute-heavy (``gemm``, ``batched_gemm``, ``convolution``, ``rnn``
for a user workload, or ``attention`` in its name); has no FLOP formula, nor has any operator
that called it; and is not composite (the counter sees what it decomposes into). On a CPU the
operators are ATen's, timed by self CPU time; on CUDA they are every operator that launches
kernels (``flash_attn::``, ``xformers::`` too), timed by its kernels' device time.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from seqpoint._signature import Signature
from seqpoint.exceptions import SeqPointWarning
from seqpoint.profiling._breakdown import ancestors, run_profiled
from seqpoint.profiling._categories import categorize
from seqpoint.profiling._counter import flop_registry
from seqpoint.workloads import TorchWorkload, Workload, describe

__all__ = ["COMPUTE_CATEGORIES", "MIN_SHARE", "UncountedOperator", "counting_coverage", "uncounted_operators"]

#: Categories whose operators do the arithmetic a FLOP count is about.
COMPUTE_CATEGORIES = frozenset({"gemm", "batched_gemm", "convolution"})
#: Smallest share of a step's operator time that an uncounted operator is reported at.
MIN_SHARE = 0.01


@dataclass(frozen=True)
class UncountedOperator:
    """A timed compute operator with no FLOP formula: its ``name``
    (``aten::_scaled_dot_product_flash_attention_for_cpu``), self ``seconds`` per step and
    ``share`` of the step's operator time."""

    name: str
    seconds: float
    share: float

    def message(self) -> str:
        return (f"{self.name} takes {100 * self.share:.1f}% of the step's operator time but has no "
                "FLOP formula: FLOP totals leave it out.")


def _covered(name: str, names: set[str]) -> bool:
    return name.rpartition("::")[2] in names


def _composite(name: str) -> bool:
    import torch

    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd"))
    except RuntimeError:  # not a registered operator name
        return False


def uncounted_operators(
    op_seconds: Mapping[str, float], *, covered: Mapping[str, bool] | None = None, min_share: float = MIN_SHARE,
    include_rnn: bool = False, registry: Mapping[Any, Any] | None = None,
) -> list[UncountedOperator]:
    """The module's rule applied to ``op_seconds`` (operator name to self seconds per step),
    largest share first. ``covered``: operators a caller with a FLOP formula covers;
    ``include_rnn`` counts ``rnn`` as compute; ``registry`` defaults to ``flop_registry()``."""
    reg = flop_registry() if registry is None else registry
    names = {p.__name__ for p in reg}
    total = sum(op_seconds.values())
    cats = COMPUTE_CATEGORIES | ({"rnn"} if include_rnn else set())
    out = []
    for name, sec in op_seconds.items():
        share = sec / total if total > 0 else 0.0
        if share < min_share:
            continue
        if categorize(name) not in cats and "attention" not in name:
            continue
        if _covered(name, names) or (covered or {}).get(name, False) or _composite(name):
            continue
        out.append(UncountedOperator(name, sec, share))
    return sorted(out, key=lambda u: -u.share)


def counting_coverage(
    workload: Workload, signature: Signature, *, steps: int = 2, min_share: float = MIN_SHARE,
    registry: Mapping[Any, Any] | None = None, warn: bool = True,
) -> list[UncountedOperator]:
    """Profile ``steps`` real steps of ``signature`` (after one warm-up) and report the timed
    compute operators no FLOP formula covers (each with a SeqPointWarning when ``warn``)."""
    from torch.autograd import DeviceType

    reg = flop_registry() if registry is None else registry
    names = {p.__name__ for p in reg}
    batch = workload.make_batch(tuple(int(v) for v in signature))
    workload.step(batch)
    on_cuda = describe(workload).on_cuda
    prof = run_profiled(workload, batch, steps, on_cuda=on_cuda)
    seconds: dict[str, float] = {}
    covered: dict[str, bool] = {}
    for ev in prof.events():
        t_us = ev.self_device_time_total if on_cuda else ev.self_cpu_time_total
        # A CPU wrapper's self time is overhead, so a CPU ranks ATen operators only; inductor's
        # triton_* ranges launch kernels of operators the count sees on the meta device.
        if (ev.device_type != DeviceType.CPU or t_us <= 0 or ev.name.startswith("triton_")
                or not (on_cuda or ev.name.startswith("aten::"))):
            continue
        seconds[ev.name] = seconds.get(ev.name, 0.0) + t_us * 1e-6 / steps
        covered[ev.name] = covered.get(ev.name, True) and any(_covered(p.name, names) for p in ancestors(ev))
    found = uncounted_operators(seconds, covered=covered, min_share=min_share,
                                include_rnn=not isinstance(workload, TorchWorkload), registry=reg)
    for op in found:
        if warn:
            warnings.warn(op.message(), SeqPointWarning, stacklevel=2)
    return found
