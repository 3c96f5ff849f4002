"""FLOP formulas for the attention kernels ``torch.utils.flop_counter`` does not cover.

``torch.utils.flop_counter.flop_registry`` counts the CUDA fused kernels (flash,
memory-efficient, cuDNN, their backward passes, and the varlen flash kernel through
``_flash_attention_forward``'s ``cum_seq`` arguments), but not the kernels a CPU run
meets: ``nn.MultiheadAttention`` and ``F.scaled_dot_product_attention`` on a CPU run
``aten::_scaled_dot_product_flash_attention_for_cpu`` (and its backward), the
``*_fused_attention_overrideable`` pair (out-of-tree backends), and the inference fast
path ``aten::_native_multi_head_attention``. Without them a CPU-counted step misses
``4·B·H·Tq·Tk·d`` FLOPs per attention forward (and twice that backward).

The formulas below follow flop_counter's own conventions (``sdpa_flop_count``: the two
batched products ``QKᵀ`` and ``PV``, a multiply-add is 2 FLOPs, softmax and scaling not
counted, no causal discount; backward: the five products of ``sdpa_backward_flop_count``,
recomputing the scores). Bytes need no formula: the counter counts every operator's
inputs and outputs. The mathematical fallback (``_scaled_dot_product_attention_math``)
is composite, so the counter sees, and counts, its ``bmm`` calls.

:func:`flop_registry` merges torch's registry with these; it is built per call (no
module-level state) and never modifies torch's own registry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from torch._ops import OpOverloadPacket

#: Operator overload packet (``torch.ops.aten.<name>``) to its FLOP formula.
Registry = dict["OpOverloadPacket", Callable[..., int]]

__all__ = ["ATTENTION_KERNELS", "flop_registry", "has_flop_formula"]

#: Attention kernels (ATen names) whose FLOPs seqpoint counts, with torch's or its own formula.
ATTENTION_KERNELS = (
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_backward",
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_cudnn_attention_backward",
    "_scaled_dot_product_fused_attention_overrideable",
    "_scaled_dot_product_fused_attention_overrideable_backward",
    "_flash_attention_forward", "_flash_attention_backward",
    "_efficient_attention_forward", "_efficient_attention_backward",
    "_native_multi_head_attention",
)


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

    return int(
        sdpa_backward_flop_count(_shape(grad_out), _shape(query), _shape(key), _shape(value))
    )


def _native_mha(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, embed_dim: int, num_head: int,
                *args: object, **kwargs: object) -> int:
    """Inference fast path of ``nn.MultiheadAttention``: in/out projections plus attention.

    ``query (B, Tq, E)``, ``key``/``value (B, Tk, E)``: ``2·B·Tq·E·E`` for the query
    projection, ``2·2·B·Tk·E·E`` for key and value, ``4·B·Tq·Tk·E`` for attention (all
    heads together) and ``2·B·Tq·E·E`` for the output projection.
    """
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
    out: Registry = {}
    for name, fn in wanted.items():
        # An older or newer torch may lack a kernel: only the ones it has are registered.
        packet = getattr(aten, name, None)
        if packet is not None:
            out[packet] = fn
    return out


def flop_registry() -> Registry:
    """Operator overload packet → FLOP formula: torch's registry plus seqpoint's own.

    Formulas take the operator's arguments (tensors, not shapes) and ``out_val``, as
    torch's registered (shape-wrapped) formulas do. torch's own entry wins where both exist.
    """
    from torch.utils.flop_counter import flop_registry as torch_registry

    merged = _own_formulas()
    merged.update(torch_registry)
    return merged


def has_flop_formula(op_name: str, registry: Registry | None = None) -> bool:
    """True when the operator ``aten::name`` (or ``name``) has a FLOP formula in ``registry``.

    ``registry`` defaults to :func:`flop_registry`.
    """
    reg = flop_registry() if registry is None else registry
    name = op_name.split("::", 1)[1] if "::" in op_name else op_name
    return any(packet.__name__ == name for packet in reg)
