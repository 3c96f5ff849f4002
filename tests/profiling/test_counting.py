"""Deterministic counts: FLOPs scale as each architecture says; the RNN shortcut is exact."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from seqpoint.devices import GPU_SPECS  # noqa: E402
from seqpoint.profiling import ProfileConfig, count_point, count_step  # noqa: E402
from seqpoint.workloads import load_workload  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def bert():
    return load_workload("bert:tiny")


@pytest.fixture(scope="module")
def gnmt():
    return load_workload("gnmt:tiny")


def test_bert_attention_adds_the_exact_quadratic_term(bert) -> None:
    # lengths multiple of 20 so the 15% masked positions are exact
    b, h, layers = 2, 32, 2
    f = {n: count_point(bert, (b, n, 0))["flops"] for n in (20, 40, 60)}
    second_difference = f[60] - 2 * f[40] + f[20]
    # per layer QK^T and PV: 2 * 2 B L^2 H forward, twice that backward: 12 B H L^2
    quad = 12 * b * h * layers
    assert second_difference == 2 * quad * 20**2
    assert count_point(bert, (4, 40, 0))["flops"] == 2 * f[40]  # linear in batch size


def test_deepspeech2_flops_grow_linearly(ds2) -> None:
    f1 = count_point(ds2, (2, 160, 0))["flops"]
    assert count_point(ds2, (4, 160, 0))["flops"] == 2 * f1
    f2 = count_point(ds2, (2, 320, 0))["flops"]
    assert 1.9 * f1 < f2 < 2.1 * f1


def test_gnmt_flops_depend_on_source_and_target(gnmt) -> None:
    base = count_point(gnmt, (2, 10, 10))["flops"]
    assert count_point(gnmt, (2, 20, 10))["flops"] > base
    assert count_point(gnmt, (2, 10, 20))["flops"] > base
    assert count_point(gnmt, (4, 10, 10))["flops"] == 2 * base


@pytest.mark.parametrize(
    ("spec", "sig"), [("deepspeech2:tiny", (2, 48, 0)), ("gnmt:tiny", (2, 6, 5))]
)
def test_rnn_shortcut_matches_a_full_meta_run_exactly(spec: str, sig: tuple, monkeypatch) -> None:
    # cuDNN's TF32 off: the shortcut knows its products are a recurrent layer's (cuDNN's), a full run does not
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    wl = load_workload(spec)
    fast = count_step(wl, sig)
    full = count_step(wl, sig, rnn_shortcut=False)
    assert fast.flops == full.flops
    assert fast.bytes == full.bytes
    assert fast.ops == full.ops
    for g in GPU_SPECS:
        assert fast.times[f"roofline_{g}"] == pytest.approx(full.times[f"roofline_{g}"], rel=1e-9)


def test_rnn_flops_equal_a_real_cpu_count(ds2) -> None:
    # the meta-device count agrees with torch's FlopCounterMode on a real CPU step
    from torch.utils.flop_counter import FlopCounterMode

    sig = (2, 64, 0)
    meta = count_point(ds2, sig)["flops"]
    wl = load_workload("deepspeech2:tiny", {"rnn_type": "gru"})
    batch = wl.make_batch(sig)
    with FlopCounterMode(display=False) as fc:
        wl.step(batch)
    assert count_point(wl, sig)["flops"] == fc.get_total_flops()
    assert meta > 0


def test_count_point_metrics_and_roofline_bounds(bert) -> None:
    m = count_point(bert, (2, 40, 0))
    for g, spec in GPU_SPECS.items():
        t = m[f"roofline_{g}_s"]
        assert t >= m["flops"] / spec.peak("fp32") - 1e-18
        assert t >= m["bytes"] / spec.bandwidth - 1e-18
    assert m["ops"] > 0
    cats = {k[len("flops_") :] for k in m if k.startswith("flops_")}
    assert {"gemm", "batched_gemm"} <= cats
    assert sum(v for k, v in m.items() if k.startswith("flops_")) == pytest.approx(m["flops"])
    assert sum(v for k, v in m.items() if k.startswith("bytes_")) == pytest.approx(m["bytes"])


def test_counting_does_not_touch_the_real_model(bert) -> None:
    before = [p.detach().clone() for p in bert.model.parameters()]
    count_point(bert, (2, 20, 0))
    assert all(torch.equal(a, b) for a, b in zip(before, bert.model.parameters(), strict=True))


def test_gpu_specs_are_the_data_sheet_numbers() -> None:
    from seqpoint.exceptions import ConfigError

    assert GPU_SPECS["h100"].peak("bf16") == 989.4e12
    assert GPU_SPECS["a100"].bandwidth == 2039e9
    with pytest.raises(
        ConfigError, match="Unknown GPU 'b300' in metric 'roofline:b300'. Valid GPUs: a100, a100-40gb, a40, b200, "
    ):
        ProfileConfig(metrics=("roofline:b300",))
    with pytest.raises(ConfigError, match="Unknown GPU 'cpu' in metric 'model:cpu'"):
        ProfileConfig(metrics=("model:cpu",))
    with pytest.raises(ConfigError, match=r"Unknown metric 'model'. Valid metrics: .*model:<gpu or device file"):
        ProfileConfig(metrics=("model",))


def test_user_workload_is_counted_on_a_real_step() -> None:
    wl = load_workload("bert:tiny")

    class User:
        name = "user"
        config = None

        def make_batch(self, sig):
            return wl.make_batch(sig)

        def step(self, batch):
            return wl.step(batch)

    assert count_point(User(), (2, 20, 0))["flops"] == count_point(wl, (2, 20, 0))["flops"]


def test_memoised_parts_do_not_change_counts() -> None:
    # a fresh workload counts everything; a used one reuses the optimizer and RNN memos
    sig = (2, 64, 0)
    fresh = count_point(load_workload("deepspeech2:tiny"), sig)
    used = load_workload("deepspeech2:tiny")
    for s in [(2, 40, 0), (3, 64, 0), (2, 80, 0)]:
        count_point(used, s)
    assert count_point(used, sig) == fresh
