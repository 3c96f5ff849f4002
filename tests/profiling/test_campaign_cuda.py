"""A campaign on a CUDA device (audit rows 3, 8, 9, 10, 15, 29, 30): what only a GPU can show.
Each test is a few seconds on an H200 but the compiled one (two workers compile bert:tiny)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.profiling import ProfileConfig, Profiler, kineto_breakdown
from seqpoint.workloads import BatchShape, UserWorkload, WorkloadConfig, describe, load_workload

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu
US = 1e-6
CUDA = {"device": "cuda"}
TIMED = ProfileConfig(timer="cuda", warmup=1, repeats=2, processes=2, drift_steps=1)


@pytest.fixture
def high_precision() -> Iterator[None]:
    """TF32 matmuls, as ``set_float32_matmul_precision("high")`` in a user's main() sets them."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    yield
    torch.set_float32_matmul_precision(before)


@pytest.mark.parametrize("spec", ["bert:tiny", "deepspeech2:tiny"])
def test_workers_time_a_cuda_workload_and_the_parent_steps_nothing(spec: str) -> None:
    """Row 3: while workers time, the parent takes no step on the GPU (its peak does not grow
    past the model it built), so the workers have the device to themselves."""
    wl = load_workload(spec, {**CUDA, "threads": 1})
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    held = torch.cuda.memory_allocated()
    ms = Profiler(wl).measure([(4, 120, 0), (2, 96, 0)] if spec.startswith("deep") else [(4, 64, 0), (2, 48, 0)], TIMED)
    assert all(m.ok for m in ms.measurements), [m.message for m in ms.measurements]
    assert all(m.metrics["time_s"] > 0 for m in ms.measurements)
    assert ms.protocol["processes"] == 2 and ms.environment["device_type"] == "cuda"
    # A step would allocate its activations; the copy coming back allocates at most itself (on an
    # H200 bert:tiny's peak stayed at held, deepspeech2:tiny's grew by 1,024 bytes).
    tensors = [*wl.model.parameters(), *wl.model.buffers()]
    copy_bytes = sum(t.numel() * t.element_size() for t in tensors)
    assert torch.cuda.max_memory_allocated() - held <= copy_bytes + 512 * len(tensors)


def test_the_parents_copy_waits_in_host_memory_while_workers_time() -> None:
    """Row 3: while fresh workers time, the parent holds none of its copy (model, optimizer state)
    on the GPU; after, the copy is back where it was and steps."""
    from seqpoint import Reporter

    wl = load_workload("bert:small", {**CUDA, "threads": 1})
    wl.step(wl.make_batch((4, 64, 0)))  # the optimizer's state exists
    torch.cuda.synchronize()

    def devices() -> list[str]:
        return [str(t.device) for t in (*wl.model.parameters(), *wl.model.buffers(),
                                         *(v for st in wl.optimizer.state.values() for v in st.values()))
                if torch.is_tensor(t)]

    before, held, seen = devices(), torch.cuda.memory_allocated(), []
    reporter = Reporter(progress=False, after_worker=(lambda p, last: seen.append(torch.cuda.memory_allocated()),))
    ms = Profiler(wl, reporter=reporter).measure([(4, 64, 0)], TIMED)
    assert ms.measurements[0].ok, ms.measurements[0].message
    assert len(seen) == 2 and max(seen) < held / 10
    assert devices() == before and "cuda:0" in before
    assert wl.step(wl.make_batch((4, 64, 0))) > 0
    assert torch.cuda.memory_allocated() == pytest.approx(held, rel=0.01)  # cuBLAS's workspaces again


def test_a_parked_rnn_comes_back_as_one_chunk_of_weights() -> None:
    """cuDNN's RNN weights are views of one flat buffer: parked while workers time and back,
    storage by storage, they still are (moved tensor by tensor they were not: each step copied
    them into one chunk again)."""
    from seqpoint import Reporter

    wl = load_workload("gnmt:tiny", CUDA)
    rnns = [m for m in wl.model.modules() if isinstance(m, torch.nn.RNNBase)]

    def chunks() -> list[int]:
        return [len({p.untyped_storage().data_ptr() for p in rnn.parameters()}) for rnn in rnns]

    before, parked_on = chunks(), []
    reporter = Reporter(progress=False, after_worker=(lambda p, last: parked_on.extend(
        str(t.device) for t in wl.model.parameters()),))
    ms = Profiler(wl, reporter=reporter).measure([(4, 16, 12)], TIMED)
    assert ms.measurements[0].ok, ms.measurements[0].message
    assert rnns and set(parked_on) == {"cpu"} and before == chunks() == [1] * len(rnns)
    assert all(p.is_cuda for p in wl.model.parameters()) and wl.step(wl.make_batch((4, 16, 12))) > 0


def test_workers_measure_at_the_campaigns_matmul_precision(high_precision: None) -> None:
    """Row 8: a fresh process starts at "highest" (IEEE fp32); the workers run at the parent's "high"."""
    ms = Profiler(load_workload("bert:tiny", CUDA)).measure([(4, 64, 0)], TIMED)
    assert ms.measurements[0].ok, ms.measurements[0].message
    assert ms.environment["process"]["matmul_precision"] == "high"


@dataclasses.dataclass(frozen=True, kw_only=True)
class _SwitchConfig(WorkloadConfig):
    parent: int = 0
    """The campaign's process id: any other process switches TF32 off when it makes a batch."""


class _SwitchesPrecision(UserWorkload):
    """A workload whose batches, in a fresh process only, set the matmul precision (as a library
    imported there would): the worker's state then differs from the campaign's."""

    Config = _SwitchConfig

    def build_model(self) -> torch.nn.Module:
        return torch.nn.Linear(8, 8)

    def build_batch(self, shape: BatchShape, gen: torch.Generator) -> dict[str, torch.Tensor]:
        if os.getpid() != self.config.parent:  # type: ignore[attr-defined]
            torch.set_float32_matmul_precision("highest")
        return {"input": torch.randn(shape.batch_size, 8, generator=gen)}

    def compute_loss(self, model, batch):  # type: ignore[no-untyped-def]
        return model(**batch).square().mean()


def test_a_worker_whose_state_differs_is_refused(high_precision: None) -> None:
    wl = _SwitchesPrecision(_SwitchConfig(device="cuda", parent=os.getpid()))
    with pytest.raises(ConfigError, match=r"A worker process runs with another process state .*matmul_precision: "
                                          r"'highest' \('high'\)"):
        Profiler(wl).measure([(4, 8, 0)], TIMED)


def _kernel_seconds(trace: Path) -> float:
    events = json.loads(trace.read_text())["traceEvents"]
    return sum(e["dur"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")) * US


def test_the_cuda_timer_waits_for_every_kernel_of_the_step(tmp_path: Path) -> None:
    """The step's clock stops after the device finished: its time is at least its kernels'."""
    from seqpoint.clocks import step_timer

    wl = load_workload("bert:tiny", CUDA)
    clock = step_timer("cuda", describe(wl).devices)
    batch = wl.make_batch((16, 256, 0))
    for _ in range(3):
        wl.step(batch)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        step_s = clock(lambda: wl.step(batch))
    prof.export_chrome_trace(str(tmp_path / "step.json"))
    kernel_s = _kernel_seconds(tmp_path / "step.json")
    assert 0 < kernel_s <= step_s * 1.001  # one stream: its kernels run one after another inside the step


def test_the_breakdown_files_every_kernel_and_gemms_as_gemm(tmp_path: Path) -> None:
    """Row 9: the Kineto trace's every kernel is in a category (they sum to its kernel time), and
    cuBLAS's matrix products land in the GEMM categories whatever their names."""
    wl = load_workload("bert:small", CUDA)
    m = Profiler(wl).point((8, 128, 0), ProfileConfig(warmup=1, repeats=1, metrics=("time", "breakdown"),
                                                      kineto_dir=str(tmp_path)))
    assert m.ok, m.message
    (trace,) = tmp_path.glob("*.json")
    read = kineto_breakdown(trace)
    assert sum(read.categories.values()) == pytest.approx(_kernel_seconds(trace), rel=0.01)
    assert sum(m.breakdown_s.values()) == pytest.approx(read.total_s, rel=0.01)  # one profiled step
    gemms = [k for k in read.kernels if re.search(r"gemm|xmma|nvjet|cutlass|sm\d+_", k.name, re.I)
             and "elementwise" not in k.name]
    assert gemms and {k.category for k in gemms} <= {"gemm", "batched_gemm"}, [(k.name, k.category) for k in gemms]
    assert read.categories.get("gemm", 0) > 0.1 * read.total_s


def test_fp16_steps_on_cuda_run_with_a_grad_scaler_and_count_skipped_ones() -> None:
    """Row 10: every fp16 step scales its loss; an overflowing one skips the optimizer, is counted
    and said once."""
    from seqpoint.exceptions import SeqPointWarning

    wl = load_workload("bert:tiny", {**CUDA, "dtype": "fp16"})
    batch = wl.make_batch((8, 128, 0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = [wl.step(batch) for _ in range(6)]
    said = [w for w in caught if issubclass(w.category, SeqPointWarning) and "was skipped" in str(w.message)]
    assert wl.steps == 6 and len(said) == min(wl.skipped_steps, 1)
    assert all(map(torch.isfinite, torch.tensor(losses)))
    ms = Profiler(wl).measure([(8, 128, 0), (4, 64, 0)], dataclasses.replace(TIMED, processes=1))
    assert all(m.ok for m in ms.measurements), [m.message for m in ms.measurements]


def test_a_point_past_the_gpus_memory_is_oom_and_the_others_are_measured() -> None:
    """Row 29: far past the device (16 TB of inputs), the meta-device bound refuses the point
    unrun; past it only in activations (bert:tiny's 40,000 x 2 x 512 x 512 fp32 attention
    scores are 84 GB a layer), the step raises out of memory; the points after both are ok."""
    wl = load_workload("bert:tiny", CUDA)
    points = [(4, 64, 0), (1 << 40, 512, 0), (40_000, 512, 0), (8, 64, 0)]
    ms = Profiler(wl).measure(points, ProfileConfig(timer="cuda", warmup=1, repeats=2))
    assert [m.status for m in ms.measurements] == ["ok", "oom", "oom", "ok"], [m.message for m in ms.measurements]
    assert "counted on the meta device" in (ms.measurements[1].message or "")
    assert torch.cuda.memory_allocated() < 8 << 30  # the failed step's activations are gone


def test_compiled_workers_each_compile_with_caches_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Row 30: inductor on CUDA in two fresh workers: each compiles (empty caches of its own,
    so the second is not served from the first's), and the campaign says what it cost."""
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    wl = load_workload("bert:tiny", {**CUDA, "compile": "true"})
    ms = Profiler(wl).measure([(4, 64, 0)], TIMED)
    assert ms.measurements[0].ok, ms.measurements[0].message
    assert ms.compile["processes"] == 2 and ms.compile["seconds"] > 0 and ms.compile["graphs"] >= 1


@pytest.mark.parametrize(("spec", "sig"), [("gnmt:tiny", (4, 9, 11)), ("deepspeech2:tiny", (4, 120, 0))])
def test_a_bf16_rnn_runs_in_bf16_where_cudnn_takes_it(spec: str, sig: tuple[int, int, int]) -> None:
    """Row 15: autocast's cuDNN RNN rule is fp16 whatever the dtype; cuDNN >= 9.13 takes bf16."""
    wl = load_workload(spec, {**CUDA, "dtype": "bf16"})
    rnns = [m for m in wl.model.modules() if isinstance(m, torch.nn.RNNBase)]
    dtypes: list[torch.dtype] = []
    for rnn in rnns:  # out is (output, state), output a tensor or a PackedSequence
        rnn.register_forward_hook(lambda mod, args, out: dtypes.append(getattr(out[0], "data", out[0]).dtype))
    bf16 = (torch.backends.cudnn.version() or 0) >= 91300  # workloads' CUDNN_BF16_RNN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if not bf16 else "error")
        wl.step(wl.make_batch(sig))
    assert rnns and dtypes and set(dtypes) == {torch.bfloat16 if bf16 else torch.float16}
