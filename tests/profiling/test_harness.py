"""The profiling harness: statistics, breakdown, memory, failures, caching, categories."""

from __future__ import annotations

import statistics

import pytest

torch = pytest.importorskip("torch")

from seqpoint import Reporter  # noqa: E402
from seqpoint.cache import MeasurementCache  # noqa: E402
from seqpoint.clocks import TIMERS  # noqa: E402
from seqpoint.exceptions import ConfigError  # noqa: E402
from seqpoint.measurements import CATEGORIES, CPU_ISA, environment_fingerprint  # noqa: E402
from seqpoint.profiling import (  # noqa: E402
    ProfileConfig,
    Profiler,
    canonical_op_name,
    categorize,
    profile_points,
)
from seqpoint.selection import SeqPoint, SeqPoints  # noqa: E402
from seqpoint.workloads import describe, load_workload  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")


class Counting:
    """Wraps a workload, counts steps, and fails on chosen sequence lengths."""

    def __init__(self, inner, oom_at=(), error_at=()):
        self.inner, self.oom_at, self.error_at = inner, set(oom_at), set(error_at)
        self.name, self.config, self.device = inner.name, inner.config, inner.device
        self.model, self.optimizer = inner.model, inner.optimizer
        self.steps = 0
        self.batches = 0

    def make_batch(self, sig):
        self.batches += 1
        self._len = sig[1]
        return self.inner.make_batch(sig)

    def step(self, batch):
        self.steps += 1
        if self._len in self.oom_at:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        if self._len in self.error_at:
            raise ValueError("shape mismatch in layer 3")
        return self.inner.step(batch)


def test_one_point_time_statistics(ds2) -> None:
    m = Profiler(ds2).point((2, 64, 0), ProfileConfig(warmup=1, repeats=5))
    assert m.ok and m.signature == (2, 64, 0)
    t = m.samples["time_s"]
    assert len(t) == 5
    assert m.metrics["time_s"] == statistics.median(t)
    assert m.metrics["time_s_min"] == min(t) and m.metrics["time_s_max"] == max(t)
    q = statistics.quantiles(t, n=4, method="inclusive")
    assert m.metrics["time_s_iqr"] == pytest.approx(q[2] - q[0])
    assert m.metrics["repeats"] == 5


def test_warmup_and_repeats_run_exactly(ds2) -> None:
    w = Counting(ds2)
    Profiler(w).point((2, 40, 0), ProfileConfig(warmup=3, repeats=4))
    assert w.steps == 7


def test_max_seconds_stops_repeating(ds2) -> None:
    m = Profiler(ds2).point((2, 40, 0), ProfileConfig(warmup=0, repeats=50, max_seconds_per_point=1e-9))
    assert m.metrics["repeats"] == 1 and m.metrics["time_s_iqr"] == 0.0


def test_cpu_timer_is_close_to_wall_on_one_thread(ds2) -> None:
    w = Profiler(ds2).point((2, 64, 0), ProfileConfig(warmup=1, repeats=3, timer="wall"))
    c = Profiler(ds2).point((2, 64, 0), ProfileConfig(warmup=1, repeats=3, timer="cpu"))
    assert 0 < c.metrics["time_s"] <= 1.5 * w.metrics["time_s"] + 1e-3


def test_breakdown_shares_sum_to_one_and_categories_are_known(ds2) -> None:
    m = Profiler(ds2).point((2, 64, 0), ProfileConfig(warmup=1, repeats=1, metrics=("time", "breakdown")))
    assert set(m.breakdown_s) <= set(CATEGORIES)
    assert {"convolution", "rnn", "optimizer"} <= set(m.breakdown_s)
    assert all(v > 0 for v in m.breakdown_s.values())
    assert m.metrics["breakdown_total_s"] == pytest.approx(sum(m.breakdown_s.values()))


def test_bert_breakdown_has_the_study_categories() -> None:
    wl = load_workload("bert:tiny")
    m = Profiler(wl).point((2, 32, 0), ProfileConfig(warmup=1, repeats=1, metrics=("breakdown",)))
    assert {"gemm", "batched_gemm", "softmax", "layer_norm", "activation", "optimizer"} <= set(
        m.breakdown_s
    )
    assert m.breakdown_s.get("other", 0.0) < 0.2 * sum(m.breakdown_s.values())


def test_memory_metric_counts_state_and_activations(ds2) -> None:
    m = Profiler(ds2).point((2, 64, 0), ProfileConfig(warmup=0, repeats=1, metrics=("memory",)))
    params = sum(p.numel() * 4 for p in ds2.model.parameters())
    assert m.metrics["peak_mem_bytes"] > 3 * params  # weights + two Adam moments + activations
    big = Profiler(ds2).point((8, 256, 0), ProfileConfig(warmup=0, repeats=1, metrics=("memory",)))
    assert big.metrics["peak_mem_bytes"] > m.metrics["peak_mem_bytes"]


def test_count_metrics_through_one_point(ds2) -> None:
    m = Profiler(ds2).point((2, 64, 0), ProfileConfig(metrics=("flops", "bytes", "roofline:h100")))
    assert m.metrics["flops"] > 0 and m.metrics["bytes"] > 0 and m.metrics["roofline_h100_s"] > 0
    assert "time_s" not in m.metrics and "roofline_a100_s" not in m.metrics


def test_simulated_oom_and_error_are_recorded_and_the_campaign_goes_on(ds2) -> None:
    w = Counting(ds2, oom_at={80}, error_at={96})
    ms = profile_points(
        w,
        [(2, 64, 0), (2, 80, 0), (2, 96, 0), (2, 112, 0)],
        ProfileConfig(warmup=0, repeats=1),
        progress=False,
    )
    assert [m.status for m in ms.measurements] == ["ok", "oom", "error", "ok"]
    assert "out of memory" in ms.measurements[1].message
    assert ms.measurements[2].message == "ValueError: shape mismatch in layer 3"
    assert not ms.complete


class Raising:
    """A workload whose every step raises ``exc``."""

    name, config = "raising", None

    def __init__(self, exc):
        self.exc = exc

    def make_batch(self, sig):
        return sig

    def step(self, batch):
        raise self.exc


@pytest.mark.parametrize(("exc", "status"), [(RuntimeError("CUDA out of memory"), "oom"), (MemoryError(), "oom"),
                                             (ValueError("out of memory"), "error")])
def test_out_of_memory_is_told_by_the_error_type_and_message(exc, status) -> None:
    assert Profiler(Raising(exc)).point((1, 4, 0), ProfileConfig(warmup=0, repeats=1)).status == status


def test_campaign_with_seqpoints_keeps_iterations_and_dedups(ds2) -> None:
    pts = SeqPoints(
        method="seqpoint",
        n_iterations=6,
        points=(
            SeqPoint(iteration=1, batch_size=2, seq_len=64, weight=3),
            SeqPoint(iteration=4, batch_size=2, seq_len=64, weight=3),
        ),
    )
    w = Counting(ds2)
    ms = profile_points(w, pts, ProfileConfig(warmup=0, repeats=2), progress=False)
    assert [m.iteration for m in ms.measurements] == [1, 4]
    assert w.steps == 3 + 1 + 2  # start-up (decoy, primitive count), then the shared signature once
    assert ms.workload == "deepspeech2:tiny" and ms.config["rnn_hidden"] == 16
    assert ms.environment["process"]["threads"] == 1


def test_cache_hit_on_second_run_measures_nothing(ds2, tmp_path) -> None:
    cache = MeasurementCache(tmp_path / "c.sqlite")
    cfg = ProfileConfig(warmup=0, repeats=2)
    w = Counting(ds2, oom_at={80})
    first = profile_points(
        w, [(2, 48, 0), (2, 64, 0), (2, 80, 0)], cfg, cache=cache, progress=False
    )
    assert len(cache) == 2  # the OOM point is not cached: it is retried next time
    w2 = Counting(ds2)
    second = profile_points(w2, [(2, 48, 0), (2, 64, 0)], cfg, cache=cache, progress=False)
    assert w2.steps == 0 and w2.batches == 0
    assert second.measurements[0].metrics == first.measurements[0].metrics
    # another profiling config is another key
    profile_points(
        w2, [(2, 48, 0)], ProfileConfig(warmup=0, repeats=3), cache=cache, progress=False
    )
    assert w2.steps == 3 + 1 + 3  # start-up before the first measured point, then 3 repeats


def test_progress_bar_renders(ds2, capsys) -> None:
    from rich.console import Console

    con = Console(force_terminal=True, width=100)
    Profiler(ds2, reporter=Reporter(console=con)).measure([(2, 40, 0)], ProfileConfig(warmup=0, repeats=1))
    assert "1/1" in capsys.readouterr().out
    # piped (not a terminal): no bar, whose last frame was all a log kept of it
    piped = Reporter(console=Console(force_terminal=False, width=100))
    Profiler(ds2, reporter=piped).measure([(2, 41, 0)], ProfileConfig(warmup=0, repeats=1))
    assert capsys.readouterr().out == ""


def test_environment_fingerprint(ds2) -> None:
    env = environment_fingerprint(describe(ds2).device)
    assert {"python", "torch", "seqpoint", "device", "device_type", "process", "machine"} <= set(env)
    assert {"threads", "interop_threads", "matmul_precision", "deterministic"} <= set(env["process"])
    assert env["torch"] == torch.__version__ and env["device_type"] == "cpu"
    # The CPU's kernel-deciding features are part of the key, in CPU_ISA's order.
    isa = env["cpu_isa"].split()
    assert set(isa) <= set(CPU_ISA) and isa == sorted(isa, key=CPU_ISA.index)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"warmup": -1}, "'warmup' parameter of ProfileConfig must be an int >= 0. Got -1"),
        ({"repeats": 0}, "'repeats' parameter of ProfileConfig must be an int >= 1. Got 0"),
        ({"timer": "sundial"}, "Unknown timer 'sundial'. Valid names: cpu, cuda, instructions, wall"),
        ({"metrics": ("speed",)}, "Unknown metric 'speed'. Valid metrics: time, flops"),
        ({"metrics": ("roofline",)}, "Unknown metric 'roofline'"),
        ({"metrics": ("roofline:b300",)}, "Unknown GPU 'b300' in metric 'roofline:b300'"),
        ({"metrics": ()}, "must be a non-empty tuple"),
        (
            {"max_seconds_per_point": -1},
            "'max_seconds_per_point' parameter of ProfileConfig must be a number >= 0",
        ),
    ],
)
def test_profile_config_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match.replace("(", r"\(").replace(")", r"\)")):
        ProfileConfig(**kwargs)


def test_point_steps_count_every_step_a_point_costs() -> None:
    assert ProfileConfig(warmup=2, repeats=5).point_steps() == (2, 5, 0)
    cfg = ProfileConfig(warmup=1, repeats=3, metrics=("time", "breakdown"), breakdown_steps=2)
    assert cfg.point_steps()._asdict() == {"warmup": 1, "repeats": 3, "profiled": 2}
    assert ProfileConfig(metrics=("time", "memory")).point_steps().profiled == 1
    assert ProfileConfig(metrics=("time", "flops")).point_steps().profiled == 0


def test_cuda_timer_without_gpu() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(ConfigError, match="The 'cuda' timer needs a CUDA device"):
        TIMERS.get("cuda")()


@pytest.mark.gpu
def test_cuda_timer_memory_and_breakdown_on_gpu() -> None:
    wl = load_workload("bert:tiny", {"device": "cuda"})
    m = Profiler(wl).point((4, 64, 0), ProfileConfig(timer="cuda", metrics=("time", "memory", "breakdown")))
    assert m.ok and m.metrics["time_s"] > 0 and m.metrics["peak_mem_bytes"] > 0
    assert m.breakdown_s and all(v > 0 for v in m.breakdown_s.values())


# --- categories ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("aten::addmm", "gemm"),
        ("aten::mm", "gemm"),
        ("aten::bmm", "batched_gemm"),
        ("aten::_scaled_dot_product_flash_attention", "batched_gemm"),
        ("aten::convolution_backward", "convolution"),
        ("aten::mkldnn_convolution", "convolution"),
        ("aten::mkldnn_rnn_layer", "rnn"),
        ("aten::_cudnn_rnn_backward", "rnn"),
        ("aten::_softmax", "softmax"),
        ("aten::_softmax_backward_data", "softmax"),
        ("aten::native_layer_norm_backward", "layer_norm"),
        ("aten::gelu_backward", "activation"),
        ("aten::hardtanh", "activation"),
        ("aten::native_dropout", "dropout"),
        ("aten::add_", "elementwise"),
        ("aten::mul", "elementwise"),
        ("aten::sum", "reduction"),
        ("aten::nll_loss_forward", "loss"),
        ("aten::_ctc_loss", "loss"),
        ("autograd::engine::evaluate_function: CtcLossBackward0", "loss"),
        ("aten::native_batch_norm", "batch_norm"),
        ("aten::cudnn_batch_norm_backward", "batch_norm"),
        ("aten::_foreach_addcdiv_", "optimizer"),
        ("Optimizer.step#LAMB.step", "optimizer"),
        ("aten::copy_", "copy"),
        ("aten::embedding_dense_backward", "copy"),
        ("aten::cat", "copy"),
        ("autograd::engine::evaluate_function: AddmmBackward0", "gemm"),
        ("autograd::engine::evaluate_function: NativeLayerNormBackward0", "layer_norm"),
        ("SoftmaxBackward0", "softmax"),
        ("MkldnnRnnLayerBackward0", "rnn"),
        ("aten.addmm.default", "gemm"),
        ("aten::totally_new_op", "other"),
    ],
)
def test_categorize(name: str, category: str) -> None:
    assert categorize(name) == category


def test_canonical_op_name() -> None:
    assert canonical_op_name("aten::addmm") == "addmm"
    assert canonical_op_name("aten.addmm.default") == "addmm"
    assert canonical_op_name("autograd::engine::evaluate_function: AddmmBackward0") == "addmm"
    assert canonical_op_name("NativeLayerNormBackward0") == "native_layer_norm"


def test_categorize_real_profile_names() -> None:
    # every aten operator a real BERT step runs gets a specific category, not "other"
    from torch.profiler import profile

    wl = load_workload("bert:tiny")
    batch = wl.make_batch((2, 16, 0))
    wl.step(batch)
    with profile() as prof:
        wl.step(batch)
    names = {e.name for e in prof.events() if e.name.startswith("aten::")}
    assert len(names) > 20
    unknown = sorted(n for n in names if categorize(n) == "other")
    assert unknown == [], unknown
