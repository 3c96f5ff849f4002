"""The operation-category breakdown of a Kineto trace: each attribution rule on a tiny hand-built
trace, the refusals, real training traces from HolisticTraceAnalysis (tests/profiling/data/kineto),
and on a GPU the breakdown of a profiled step."""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

import pytest

from seqpoint.exceptions import InputError
from seqpoint.measurements import CATEGORIES
from seqpoint.profiling import (
    KinetoBreakdown,
    categorize,
    kernel_category,
    kineto_breakdown,
)

DATA = Path(__file__).parent / "data" / "kineto"
US = 1e-6


def _op(name: str, ts: float, dur: float, *, cat: str = "cpu_op", tid: int = 1) -> dict[str, object]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def _launch(corr: int, ts: float, *, name: str = "cudaLaunchKernel", tid: int = 1,
            cat: str = "cuda_runtime") -> dict[str, object]:
    return {**_op(name, ts, 1, cat=cat, tid=tid), "args": {"correlation": corr}}


def _kernel(name: str, corr: int, dur: float, *, cat: str = "kernel") -> dict[str, object]:
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": 10_000 + corr, "dur": dur,
            "args": {"correlation": corr, "stream": 7}}


def _write(tmp_path: Path, events: list[dict[str, object]], name: str = "trace.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def _rows(path: Path) -> set[tuple[str, str, float, int]]:
    return {(k.name, k.category, round(k.seconds / US, 6), k.count) for k in kineto_breakdown(path).kernels}


GEMM = "ampere_sgemm_128x64_nn"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, float*)"


def test_each_kernel_goes_to_the_nearest_categorised_operator(tmp_path: Path) -> None:
    events = [
        _op("aten::linear", 0, 100), _op("aten::addmm", 10, 40), _launch(1, 20), _kernel(GEMM, 1, 40),
        # an unknown operator inside softmax: the nearest categorised ancestor is softmax
        _op("aten::softmax", 100, 100), _op("aten::my_new_op", 110, 40), _launch(2, 120),
        _kernel("mystery_kernel", 2, 8),
        # after aten::my_new_op ended, still inside aten::softmax
        _op("aten::add", 300, 10), _launch(3, 305), _kernel(ADD, 3, 3),
        _op("aten::zero_", 320, 10), _launch(4, 322, name="cudaMemsetAsync"),
        _kernel("Memset (Device)", 4, 1, cat="gpu_memset"),
    ]
    assert _rows(_write(tmp_path, events)) == {(GEMM, "gemm", 40, 1), ("mystery_kernel", "softmax", 8, 1),
                                               (ADD, "elementwise", 3, 1), ("Memset (Device)", "copy", 1, 1)}


def test_optimizer_and_rnn_ranges_own_what_they_launch_and_nccl_is_communication(tmp_path: Path) -> None:
    events = [
        _op("Optimizer.step#Adam.step", 0, 100, cat="user_annotation"), _op("aten::add", 10, 20),
        _launch(1, 15), _kernel(ADD, 1, 5),
        _op("c10d::_allgather_base_", 40, 20), _launch(2, 45),
        _kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 2, 30),
        _op("aten::lstm", 200, 100), _op("aten::mm", 210, 20), _launch(3, 215), _kernel(GEMM, 3, 7),
        _op("aten::add", 400, 10), _launch(4, 405), _kernel(ADD, 4, 2),
    ]
    path = _write(tmp_path, events)
    assert _rows(path) == {(ADD, "optimizer", 5, 1), (ADD, "elementwise", 2, 1), (GEMM, "rnn", 7, 1),
                           ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                            "communication", 30, 1)}
    bd = kineto_breakdown(path)
    assert list(bd.categories) == ["rnn", "elementwise", "optimizer", "communication"]  # CATEGORIES order
    assert bd.categories == pytest.approx({"rnn": 7 * US, "elementwise": 2 * US, "optimizer": 5 * US,
                                           "communication": 30 * US})
    assert bd.total_s == pytest.approx(44 * US)


def test_kernels_without_a_categorised_operator_go_by_their_names(tmp_path: Path) -> None:
    flash = "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>, true>(Flash_fwd_params)"
    fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float*)"
    events = [
        # a free-text annotation is no operator: "compute_loss" does not make its kernels loss
        _op("compute_loss", 0, 100, cat="user_annotation"), _launch(1, 10),
        _kernel("triton_red_fused__log_softmax_nll_loss_forward_0", 1, 4), _launch(2, 20),
        _kernel("my_custom_kernel", 2, 6),
        # inductor's launch range names the fused operators
        _op("triton_poi_fused_gelu_mul_0", 200, 20), _launch(3, 205, name="cuLaunchKernel", cat="cuda_driver"),
        _kernel("triton_poi_fused_gelu_mul_0", 3, 9),
        # a CUDA-graph replay launches many operators' kernels: aten::mm does not own them
        _op("aten::mm", 300, 50), _launch(4, 310, name="cudaGraphLaunch"), _kernel(flash, 4, 11),
        _kernel(fill, 4, 2),
        # no launch in the trace at all
        _kernel("Memcpy HtoD (Pinned -> Device)", 99, 13, cat="gpu_memcpy"),
    ]
    assert _rows(_write(tmp_path, events)) == {
        ("triton_red_fused__log_softmax_nll_loss_forward_0", "softmax", 4, 1),
        ("my_custom_kernel", "other", 6, 1), ("triton_poi_fused_gelu_mul_0", "activation", 9, 1),
        (flash, "batched_gemm", 11, 1), (fill, "copy", 2, 1), ("Memcpy HtoD (Pinned -> Device)", "copy", 13, 1)}


def test_ancestry_is_time_nesting_on_the_launching_thread(tmp_path: Path) -> None:
    events = [_op("aten::mm", 0, 100, tid=1), _launch(1, 50, tid=2), _kernel(GEMM, 1, 5),
              _op("aten::addmm", 200, 10), _launch(2, 210), _kernel(GEMM, 2, 5),  # at the op's end: outside
              _op("aten::bmm", 300, 10), _launch(3, 300), _kernel(GEMM, 3, 5)]  # at its start: inside
    assert _rows(_write(tmp_path, events)) == {(GEMM, "gemm", 10, 2), (GEMM, "batched_gemm", 5, 1)}


def test_one_row_per_kernel_name_and_category_and_older_kineto_names(tmp_path: Path) -> None:
    events = [_op("aten::add", 0, 10, cat="Operator"), _launch(1, 1, cat="Runtime"),
              _launch(2, 2, cat="Runtime"), _kernel(ADD, 1, 2, cat="Kernel"), _kernel(ADD, 2, 3, cat="Kernel"),
              _op("aten::mul", 20, 10, cat="Operator"), _launch(3, 21, cat="Runtime"),
              _kernel(ADD, 3, 4, cat="Kernel")]
    (row,) = kineto_breakdown(_write(tmp_path, events)).kernels
    assert (row.name, row.category, row.seconds, row.count) == (ADD, "elementwise", pytest.approx(9 * US), 3)
    events[5] = _op("Optimizer.step#SGD.step", 20, 10, cat="user_annotation")
    assert _rows(_write(tmp_path, events)) == {(ADD, "elementwise", 5, 2), (ADD, "optimizer", 4, 1)}


def test_gzip_reads_like_json_and_to_dict_is_the_cli_contract(tmp_path: Path) -> None:
    events = [_op("aten::mm", 0, 10), _launch(1, 1), _kernel(GEMM, 1, 2)]
    plain = _write(tmp_path, events)
    packed = tmp_path / "trace.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert kineto_breakdown(packed) == kineto_breakdown(plain)
    assert kineto_breakdown(packed).to_dict() == {
        "total_s": 2 * US, "categories": {"gemm": 2 * US},
        "kernels": [{"name": GEMM, "category": "gemm", "seconds": 2 * US, "count": 1}]}


@pytest.mark.parametrize(("content", "match"), [
    (b"hello", r"bad\.json: line 1: invalid JSON .*give a Kineto trace"),
    (b"[1, 2]", r"bad\.json: not a Kineto trace \(no 'traceEvents' list\)"),
    (b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1}]}',
     r"bad\.json: no GPU kernels in the trace .*ProfilerActivity\.CUDA"),
    (b'{"traceEvents": [{"cat": "kernel", "name": "k", "ts": 0, "dur": -1}]}',
     r"bad\.json: traceEvents: 0\.dur: must be >= 0"),
    (b'{"traceEvents": [{"name": "M"}, {"cat": "kernel", "name": 3, "ts": 0, "dur": 1}]}',
     r"bad\.json: traceEvents: 1\.name: must be a string"),
    (b'{"traceEvents": [{"cat": "kernel", "name": "k", "ts": 0, "dur": 1, "args": {"correlation": 1.5}}]}',
     r"bad\.json: traceEvents: 0\.args\.correlation: must be an integer"),
    (b"\x1f\x8b\x08\x00broken", r"bad\.json: cannot be decompressed .*export the trace again"),
    (b'{"traceEvents": [{"cat": "kernel", "name": "k", "ts": 0, "dur": NaN}]}', r"NaN is not a number"),
])
def test_bad_traces_are_one_input_error(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=match):
        kineto_breakdown(path)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.json does not exist or is not a file; give a Kineto trace"):
        kineto_breakdown(tmp_path / "nope.json")


@pytest.mark.parametrize(("name", "category"), [
    ("ampere_sgemm_128x64_nn", "gemm"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_"
     "256x64_16x4_nn_align4::Params)", "gemm"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", "gemm"),
    ("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT", "gemm"),
    ("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0", "gemm"),
    ("void splitKreduce_kernel<float, float, float, float, true, false, false>(cublasSplitKParams<float>)", "gemm"),
    ("sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw", "convolution"),
    ("void fft2d_c2r_32x32<float, false, false, 0u, false, false>(float*, cudnn::reduced_divisor)", "convolution"),
    ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits>(Flash_bwd_params)",
     "batched_gemm"),
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t>::Params)",
     "batched_gemm"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "communication"),
    ("Memcpy DtoD (Device -> Device)", "copy"),
    ("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 128, true, 1>(float, float)", "batch_norm"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float)", "layer_norm"),
    ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>(long, long)", "layer_norm"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>(float*)", "softmax"),
    ("void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float const*)", "reduction"),
    ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float>>>()",
     "reduction"),
    ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::"
     "{lambda()#3}::operator()() const::{lambda(float)#1}>(int)", "copy"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor<float, 4>>()",
     "optimizer"),
    ("void split_embedding_codegen_forward_unweighted_kernel<c10::Half, float, long>(at::GenericPackedTensorAccessor)",
     "copy"),
    ("void fbgemm_gpu::permute_2D_data_kernel<false, int, int>(int, int)", "copy"),  # fbgemm is no GEMM
    ("triton_per_fused_add_native_layer_norm_native_layer_norm_backward_3", "layer_norm"),
    ("triton_tem_fused_addmm_relu_1", "gemm"),
    ("triton_poi_fused__to_copy_add_0", "elementwise"),
    ("triton__0d1d2d3d", "other"),
])
def test_kernel_category_by_name(name: str, category: str) -> None:
    assert kernel_category(name) == category


@pytest.mark.parametrize(("name", "category"), [
    ("c10d::allreduce_", "communication"),
    ("nccl:all_reduce", "communication"),
    ("_c10d_functional::all_gather_into_tensor", "communication"),
    ("record_param_comms", "other"),
    ("flash_attn::_flash_attn_forward", "batched_gemm"),
    ("autograd::engine::evaluate_function: FlashAttnFuncBackward", "batched_gemm"),
    ("fbgemm::permute_pooled_embs_auto_grad", "other"),
    ("fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function", "copy"),
    ("fbgemm::FloatToFP8RowwiseQuantized", "copy"),
    ("aten::max_pool2d_with_indices_backward", "reduction"),
    ("aten::adaptive_avg_pool2d", "reduction"),
    ("triton_red_fused__log_softmax_nll_loss_forward_0", "softmax"),
    ("triton_poi_fused_convolution_backward_3", "convolution"),
])
def test_categorize_collectives_namespaces_and_inductor_kernels(name: str, category: str) -> None:
    assert categorize(name) == category


# --- real training traces ------------------------------------------------------------------

_REAL = ["resnet_ddp_a100", "recsys_shampoo_sm80", "compiled_cudagraphs_a100", "toy_train_mi250"]


@functools.cache
def _real(name: str) -> KinetoBreakdown:
    return kineto_breakdown(DATA / f"{name}.json.gz")


@pytest.mark.parametrize("name", _REAL)
def test_real_traces_account_for_every_kernel(name: str) -> None:
    events = json.loads(gzip.decompress((DATA / f"{name}.json.gz").read_bytes()))["traceEvents"]
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    kernel_s = sum(e["dur"] for e in device) * US
    nccl_s = sum(e["dur"] for e in device if e["name"].startswith("nccl")) * US
    bd = _real(name)
    assert set(bd.categories) <= set(CATEGORIES)
    assert bd.total_s == pytest.approx(kernel_s, rel=1e-12)
    assert sum(bd.categories.values()) == pytest.approx(kernel_s, rel=0.01)
    assert bd.categories.get("other", 0.0) <= 0.05 * kernel_s
    assert sum(k.count for k in bd.kernels) == len(device)
    assert bd.categories.get("communication", 0.0) == pytest.approx(nccl_s, rel=1e-12)
    gemms = [k for k in bd.kernels if kernel_category(k.name) == "gemm"]  # cuBLAS, CUTLASS, rocBLAS ...
    assert gemms
    # a GEMM kernel is in a GEMM category unless a convolution or an optimizer step launched it
    assert {k.category for k in gemms} <= {"gemm", "batched_gemm", "convolution", "optimizer"}


def test_real_trace_categories_follow_the_model() -> None:
    resnet = _real("resnet_ddp_a100").categories
    assert max(resnet, key=resnet.__getitem__) == "convolution"
    assert {"batch_norm", "communication", "optimizer"} <= set(resnet) and "other" not in resnet
    compiled = _real("compiled_cudagraphs_a100")
    # the replayed graphs' old-style Triton names (triton__0d1d2d...) say nothing: 'other', listed
    assert {k.name for k in compiled.kernels if k.category == "other"} >= {"triton__0d1d2d"}
    assert kineto_breakdown(DATA / "compiled_triton.json.gz").categories == {"elementwise": pytest.approx(1.76 * US)}


# --- a profiled step on a GPU --------------------------------------------------------------


@pytest.mark.gpu
def test_profiled_cuda_step_attributes_every_kernel(tmp_path: Path) -> None:
    from seqpoint.profiling import ProfileConfig, Profiler
    from seqpoint.workloads import load_workload

    wl = load_workload("bert:tiny", {"device": "cuda"})
    cfg = ProfileConfig(warmup=1, repeats=1, metrics=("breakdown",), breakdown_steps=2, kineto_dir=str(tmp_path))
    m = Profiler(wl).point((4, 64, 0), cfg, iteration=3)
    (trace,) = tmp_path.glob("*.json")
    events = json.loads(trace.read_text())["traceEvents"]
    kernel_s = sum(e["dur"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")) * US / 2
    assert kernel_s > 0
    assert m.metrics["breakdown_total_s"] == pytest.approx(kernel_s, rel=1e-9)
    assert sum(m.breakdown_s.values()) == pytest.approx(kernel_s, rel=1e-9)
    assert m.breakdown_s.get("other", 0.0) <= 0.05 * kernel_s
    assert {"gemm", "softmax", "layer_norm", "optimizer"} <= set(m.breakdown_s)


@pytest.mark.gpu
def test_coverage_on_cuda_ranks_kernel_time() -> None:
    from seqpoint.profiling import counting_coverage
    from seqpoint.workloads import load_workload

    wl = load_workload("bert:tiny", {"device": "cuda"})
    found = counting_coverage(wl, (4, 64, 0), registry={}, warn=False)  # no formulas: GEMMs are flagged
    assert {"aten::mm", "aten::addmm"} & {u.name for u in found}
    assert all(u.seconds > 0 and 0 < u.share <= 1 for u in found)
