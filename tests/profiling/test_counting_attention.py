"""Attention kernels are counted: CPU flash (fwd/bwd), fused overrideable, native MHA, and
torch's own formulas for the CUDA kernels; a timed kernel without a formula is reported."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")

from seqpoint.exceptions import SeqPointWarning  # noqa: E402
from seqpoint.profiling import count_point, counting_coverage, flop_registry, uncounted_operators  # noqa: E402

B, H, T, S, D = 2, 3, 7, 5, 8

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


def _meta(*shape: int) -> torch.Tensor:
    return torch.empty(shape, device="meta")


pytestmark = pytest.mark.usefixtures("one_thread")


def test_every_named_attention_kernel_has_a_formula() -> None:
    reg = flop_registry()
    present = [getattr(torch.ops.aten, n) for n in ATTENTION_KERNELS if hasattr(torch.ops.aten, n)]
    assert torch.ops.aten._scaled_dot_product_flash_attention_for_cpu in present
    for packet in present:
        assert packet in reg, packet.__name__
    assert torch.ops.aten._softmax not in reg


def test_cpu_flash_forward_and_backward_follow_sdpa_conventions() -> None:
    reg = flop_registry()
    q, k, v = _meta(B, H, T, D), _meta(B, H, S, D), _meta(B, H, S, D)
    fwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    out = fwd.default(q, k, v)
    assert reg[fwd](q, k, v, out_val=out) == 4 * B * H * T * S * D
    bwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward
    g = _meta(B, H, T, D)
    assert reg[bwd](g, q, k, v, out[0], out[1], 0.0, False, out_val=None) == 10 * B * H * T * S * D
    over = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    assert reg[over](q, k, v, out_val=None) == 4 * B * H * T * S * D


def test_cuda_kernels_keep_torch_formulas() -> None:
    from torch.utils.flop_counter import flop_registry as torch_registry
    from torch.utils.flop_counter import sdpa_flop_count

    reg = flop_registry()
    q, k, v = _meta(B, H, T, D), _meta(B, H, S, D), _meta(B, H, S, D)
    for name in ("_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
                 "_scaled_dot_product_cudnn_attention"):
        packet = getattr(torch.ops.aten, name)
        assert reg[packet] is torch_registry[packet]
        assert reg[packet](q, k, v, out_val=None) == sdpa_flop_count(q.shape, k.shape, v.shape)
        assert sdpa_flop_count(q.shape, k.shape, v.shape) == 4 * B * H * T * S * D


def test_native_mha_counts_projections_and_attention() -> None:
    e, heads = 8, 2
    q = _meta(B, T, e)
    packet = torch.ops.aten._native_multi_head_attention
    f = flop_registry()[packet](q, q, q, e, heads, None, None, None, None, out_val=None)
    assert f == 8 * B * T * e * e + 4 * B * T * T * e


class _MHAStep:
    """A user workload (counted on a real CPU step): one nn.MultiheadAttention layer."""

    name = "mha"
    config = None

    def __init__(self, width: int = 32, heads: int = 4) -> None:
        torch.manual_seed(0)
        self.model = torch.nn.MultiheadAttention(width, heads, batch_first=True)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.width = width

    def make_batch(self, sig):
        return torch.randn(sig[0], sig[1], self.width)

    def step(self, x):
        self.optimizer.zero_grad()
        y, _ = self.model(x, x, x, need_weights=False)
        y.sum().backward()
        self.optimizer.step()


def test_real_cpu_mha_step_counts_attention() -> None:
    wl = _MHAStep()
    b, t, e = 2, 16, 32
    f = count_point(wl, (b, t, 0))["flops"]
    proj = 2 * b * t * e * e  # one of the q, k, v, out projections, forward
    attention = 4 * b * t * t * e  # QK^T and PV over all heads
    # backward: the input needs no gradient, so q, k, v get their weight gradient only
    # (1x) and the out projection both (2x); the attention backward recomputes the scores
    # and runs four more products (flop_counter's convention): 2.5x its forward
    assert f == 4 * proj + (3 + 2) * proj + attention + attention * 5 // 2
    # without the CPU kernel's formula the attention FLOPs were missing entirely
    assert f - 9 * proj == 3.5 * attention


def test_uncounted_rule_on_plain_times() -> None:
    times = {"aten::_scaled_dot_product_flash_attention_for_cpu": 0.5, "aten::addmm": 0.4,
             "aten::linear": 0.05, "aten::add": 0.05}
    from torch.utils.flop_counter import flop_registry as torch_registry

    found = uncounted_operators(times, registry=torch_registry)
    assert [u.name for u in found] == ["aten::_scaled_dot_product_flash_attention_for_cpu"]
    assert found[0].share == pytest.approx(0.5)
    assert uncounted_operators(times) == []
    assert uncounted_operators(times, registry=torch_registry, min_share=0.6) == []


def test_coverage_of_a_real_encoder_layer_warns_only_without_formulas() -> None:
    from torch.utils.flop_counter import flop_registry as torch_registry

    wl = _MHAStep(width=64, heads=4)
    sig = (4, 128, 0)
    with pytest.warns(SeqPointWarning, match="flash_attention_for_cpu takes .*% of the step"):
        found = counting_coverage(wl, sig, registry=torch_registry)
    # shares are measured times: only their presence and range are asserted
    assert {u.name for u in found} == {"aten::_scaled_dot_product_flash_attention_for_cpu",
                                       "aten::_scaled_dot_product_flash_attention_for_cpu_backward"}
    assert all(0.01 <= u.share <= 1 for u in found)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeqPointWarning)
        assert counting_coverage(wl, sig) == []
