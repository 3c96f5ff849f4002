"""FLOP formulas for the attention kernels ``torch.utils.flop_counter`` does not cover.

torch counts the CUDA fused kernels, not those a CPU run meets: the CPU flash kernel
(``_scaled_dot_product_flash_attention_for_cpu`` and its backward), the
``*_fused_attention_overrideable`` pair and ``_native_multi_head_attention``. Without
them a CPU-counted step misses ``4·B·H·Tq·Tk·d`` FLOPs per attention forward. The formulas
follow flop_counter's conventions (``sdpa_flop_count``: a multiply-add is 2 FLOPs, softmax
not counted, no causal discount). :func:`flop_registry` merges them with torch's registry,
built per call, never modifying torch's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch._ops import OpOverloadPacket

#: Operator overload packet (``torch.ops.aten.<name>``) to its FLOP formula.
Registry = dict["OpOverloadPacket", Callable[..., int]]

__all__ = ["flop_registry"]


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(v) for v in t.shape)


def _sdpa_forward(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *args: object, **kwargs: object) -> int:
    """``(q, k, v, ...)`` kernels: flash for CPU, fused overrideable."""
    from torch.utils.flop_counter import sdpa_flop_count

    return int(sdpa_flop_count(_shape(query), _shape(key), _shape(value)))


def _sdpa_backward(grad_out: torch.Tensor, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                   *args: object, **kwargs: object) -> int:
    """``(grad_out, q, k, v, ...)`` backward kernels."""
    from torch.utils.flop_counter import sdpa_backward_flop_count

    return int(sdpa_backward_flop_count(_shape(grad_out), _shape(query), _shape(key), _shape(value)))


def _native_mha(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, embed_dim: int, num_head: int,
                *args: object, **kwargs: object) -> int:
    """Inference fast path of ``nn.MultiheadAttention`` (``query (B, Tq, E)``, ``key``/``value
    (B, Tk, E)``): query, key and value projections, attention over all heads, output projection."""
    q, k = _shape(query), _shape(key)
    b, tq, e = (q[0], q[1], q[2]) if len(q) == 3 else (1, q[0], q[1])
    tk = k[1] if len(k) == 3 else k[0]
    return 2 * b * tq * e * e + 4 * b * tk * e * e + 4 * b * tq * tk * e + 2 * b * tq * e * e


def _own_formulas() -> Registry:
    import torch

    aten = torch.ops.aten
    wanted: dict[str, Callable[..., int]] = {
        "_scaled_dot_product_flash_attention_for_cpu": _sdpa_forward,
        "_scaled_dot_product_flash_attention_for_cpu_backward": _sdpa_backward,
        "_scaled_dot_product_fused_attention_overrideable": _sdpa_forward,
        "_scaled_dot_product_fused_attention_overrideable_backward": _sdpa_backward,
        "_native_multi_head_attention": _native_mha,
    }
    # An older or newer torch may lack a kernel: only the ones it has are registered.
    return {getattr(aten, name): fn for name, fn in wanted.items() if hasattr(aten, name)}


def flop_registry() -> Registry:
    """Operator overload packet → FLOP formula: torch's registry plus seqpoint's own.

    Formulas take the operator's arguments (tensors, not shapes) and ``out_val``, as
    torch's registered (shape-wrapped) formulas do. torch's own entry wins where both exist.
    """
    from torch.utils.flop_counter import flop_registry as torch_registry

    merged = _own_formulas()
    merged.update(torch_registry)
    return merged

