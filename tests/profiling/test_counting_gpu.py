"""Counting a step as a GPU runs it: bytes at the autocast dtype, each product at the precision
cuBLAS/cuDNN run it (TF32 included), one kernel per operator (a recurrent layer's pointwise
operators fused), fused attention, and the device model's ``model_<gpu>_s`` metric."""

from __future__ import annotations

import dataclasses
from importlib import resources

import pytest

torch = pytest.importorskip("torch")

from seqpoint.exceptions import ConfigError  # noqa: E402
from seqpoint.profiling import ProfileConfig, Profiler, count_point, count_step  # noqa: E402
from seqpoint.workloads import BatchShape, UserWorkload, WorkloadConfig, load_workload  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")


def test_bf16_moves_its_products_at_half_the_bytes_and_counts_autocasts_casts() -> None:
    sig = (4, 40, 0)
    fp32 = count_point(load_workload("bert:tiny"), sig)
    bf16 = count_point(load_workload("bert:tiny", {"dtype": "bf16"}), sig)
    assert bf16["flops"] == fp32["flops"]
    # every product reads and writes bf16 (its fp32 weights cast once per forward pass, as autocast caches them)
    for cat in ("gemm", "batched_gemm"):
        assert bf16[f"bytes_{cat}"] == fp32[f"bytes_{cat}"] / 2, cat
    assert bf16["bytes_copy"] > fp32["bytes_copy"] and bf16["ops"] > fp32["ops"]  # the casts
    assert bf16["bytes_softmax"] == fp32["bytes_softmax"]  # softmax runs in fp32 under autocast
    # no bf16 on a V100: left out of the default bounds, refused when asked for
    assert "roofline_v100_s" in fp32 and "roofline_v100_s" not in bf16
    with pytest.raises(ConfigError, match="The V100 SXM2 16GB has no bf16 arithmetic"):
        count_point(load_workload("bert:tiny", {"dtype": "bf16"}), sig, models=["v100"])


def test_a_trainers_bf16_flag_is_its_dtype() -> None:
    bert = load_workload("bert:tiny")

    class Trainer:  # a user workload whose config is a dict, as a Hugging Face TrainerWorkload's
        name, config = "trainer", {"bf16": True, "fp16": False}

        def make_batch(self, sig: tuple[int, ...]) -> object:
            return bert.make_batch(sig)

        def step(self, batch: object) -> float:
            return bert.step(batch)

    counts = count_point(Trainer(), (2, 20, 0))
    assert "roofline_v100_s" not in counts and "roofline_a100_s" in counts


def test_tf32_runs_products_on_tensor_cores_where_cublas_and_cudnn_would(monkeypatch) -> None:
    sig = (8, 128, 0)  # large enough for the products to be compute-bound on an A100 in fp32
    fp32 = count_point(load_workload("bert:small"), sig, models=["a100"])
    tf32 = count_point(load_workload("bert:small", {"dtype": "tf32"}), sig, models=["a100"])
    assert tf32["flops"] == fp32["flops"] and tf32["bytes"] == fp32["bytes"]  # fp32 tensors
    assert tf32["roofline_a100_s"] < 0.6 * fp32["roofline_a100_s"] and tf32["model_a100_s"] < fp32["model_a100_s"]
    assert tf32["roofline_v100_s"] == fp32["roofline_v100_s"]  # Volta has no TF32
    # fp32 convolutions and RNNs take cuDNN's TF32 (on by default): turned off, they are slower
    ds2 = (2, 160, 0)
    default = count_point(load_workload("deepspeech2:small"), ds2)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    strict = count_point(load_workload("deepspeech2:small"), ds2)
    assert strict["roofline_a100_s"] > default["roofline_a100_s"]
    assert strict["roofline_v100_s"] == default["roofline_v100_s"]


def test_tf32_is_a_workload_dtype_that_runs_fp32_on_a_cpu() -> None:
    wl = load_workload("bert:tiny", {"dtype": "tf32"})
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    assert wl.step(wl.make_batch((2, 20, 0))) == pytest.approx(load_workload("bert:tiny").step(
        load_workload("bert:tiny").make_batch((2, 20, 0))), rel=1e-6)
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == flags


@pytest.mark.gpu
def test_tf32_sets_the_flags_for_its_steps_and_restores_them_on_cuda() -> None:
    wl = load_workload("bert:tiny", {"dtype": "tf32", "device": "cuda"})
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        seen = []
        wl.model.register_forward_hook(lambda *a: seen.append(torch.backends.cuda.matmul.allow_tf32))
        wl.step(wl.make_batch((2, 20, 0)))
        assert seen == [True] and torch.backends.cuda.matmul.allow_tf32 is False
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_each_operator_is_a_kernel_but_a_recurrent_layers_pointwise_ones() -> None:
    bert = count_step(load_workload("bert:tiny"), (2, 20, 0))
    assert sum(bert.category_kernels.values()) == bert.ops
    gnmt = count_step(load_workload("gnmt:tiny"), (2, 12, 9))
    # cuDNN runs a step's gates inside its products' kernels: only the products count
    assert 0 < gnmt.category_kernels["rnn"] < gnmt.ops - sum(v for k, v in gnmt.category_kernels.items() if k != "rnn")
    assert gnmt.category_flops["rnn"] > 0 and "optimizer" in gnmt.category_bytes


@dataclasses.dataclass(frozen=True, kw_only=True)
class _AttentionConfig(WorkloadConfig):
    heads: int = 2


class _Attention(UserWorkload):
    """One self-attention layer through ``scaled_dot_product_attention``."""

    Config = _AttentionConfig

    def build_model(self) -> torch.nn.Module:
        class Net(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.qkv = torch.nn.Linear(16, 48)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                b, n, _ = x.shape
                q, k, v = self.qkv(x).view(b, n, 3, 2, 8).permute(2, 0, 3, 1, 4)
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.1).square().mean()

        return Net()

    def build_batch(self, shape: BatchShape, gen: torch.Generator) -> dict[str, torch.Tensor]:
        return {"x": torch.randn(shape.batch_size, shape.seq_len, 16, generator=gen)}


def test_attention_is_the_one_fused_kernel_a_gpu_runs() -> None:
    b, n = 2, 256
    cost = count_step(_Attention(), (b, n, 0))
    # flash attention: 4 B H L^2 d forward, 10 backward, in batched_gemm; no L x L softmax written
    assert cost.category_flops["batched_gemm"] == 14 * b * 2 * n * n * 8
    assert "softmax" not in cost.category_bytes and cost.category_kernels["batched_gemm"] == 2
    assert cost.category_bytes["batched_gemm"] < b * 2 * n * n * 4  # less than one fp32 score matrix


def test_the_model_metric_end_to_end_on_the_meta_device(tmp_path) -> None:
    wl = load_workload("gnmt:tiny", {"dtype": "bf16"})
    sig = (2, 12, 9)
    point = Profiler(wl).point(sig, ProfileConfig(metrics=("model:h100", "model:h200", "roofline:h100")))
    assert set(point.metrics) == {"model_h100_s", "model_h200_s", "roofline_h100_s"}
    assert point.metrics == {k: v for k, v in count_point(wl, sig, models=["h100", "h200"]).items()
                             if k in point.metrics}
    assert point.metrics["model_h100_s"] > point.metrics["roofline_h100_s"]
    assert point.metrics["model_h200_s"] <= point.metrics["model_h100_s"]  # more bandwidth, same compute
    # a device file of one's own: the H100 with half its bandwidth
    h100 = resources.files("seqpoint").joinpath("data", "devices", "h100.toml").read_text(encoding="utf-8")
    slow = tmp_path / "slow-h100.toml"
    slow.write_text(h100.replace("bandwidth = 3.35e12", "bandwidth = 1.675e12"), encoding="utf-8")
    counts = count_point(wl, sig, models=["h100", str(slow)])
    assert counts["model_slow-h100_s"] > counts["model_h100_s"]
    assert ProfileConfig(metrics=("model:h100",)).to_dict()["device_model"]["tile"] == 64
    assert "device_model" not in ProfileConfig(metrics=("roofline:h100",)).to_dict()
