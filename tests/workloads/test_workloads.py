"""Reference workloads: they train, are deterministic, and validate their configs."""

from __future__ import annotations

import dataclasses
import itertools
import math
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

from seqpoint.exceptions import ConfigError, InputError  # noqa: E402
from seqpoint.workloads import (  # noqa: E402
    WORKLOADS,
    Workload,
    load_workload,
    packed_document_lengths,
)

# The reference workloads' configs, as the registry holds them.
BertConfig, DeepSpeech2Config, GNMTConfig = (WORKLOADS.get(n).Config for n in ("bert", "deepspeech2", "gnmt"))

SIGS = {
    "deepspeech2:tiny": (4, 120, 0),
    "gnmt:tiny": (4, 9, 11),
    "bert:tiny": (4, 20, 0),
}


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


@pytest.mark.parametrize("spec", sorted(SIGS))
def test_workload_trains_loss_decreases_on_a_fixed_batch(spec: str) -> None:
    wl = load_workload(spec)
    assert isinstance(wl, Workload)
    batch = wl.make_batch(SIGS[spec])
    losses = [wl.step(batch) for _ in range(6)]
    assert all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0]
    assert all(b < a for a, b in itertools.pairwise(losses))


@pytest.mark.parametrize("spec", sorted(SIGS))
def test_make_batch_is_deterministic_and_seeded(spec: str) -> None:
    a = load_workload(spec).make_batch(SIGS[spec])
    b = load_workload(spec).make_batch(SIGS[spec])
    c = load_workload(spec, {"seed": 1}).make_batch(SIGS[spec])
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(
        not torch.equal(a[k], c[k]) for k in a if a[k].is_floating_point() or k != "positions"
    )


def test_weights_are_seeded_and_independent_of_global_rng() -> None:
    torch.manual_seed(123)
    w1 = load_workload("bert:tiny").model.word.weight.clone()
    torch.manual_seed(999)
    w2 = load_workload("bert:tiny").model.word.weight.clone()
    assert torch.equal(w1, w2)
    assert not torch.equal(w1, load_workload("bert:tiny", {"seed": 3}).model.word.weight)


def test_deepspeech2_shapes_and_target_length() -> None:
    wl = load_workload("deepspeech2:tiny")
    batch = wl.make_batch((3, 280, 0))
    assert batch["spectrogram"].shape == (3, 1, 16, 280)
    # 280 frames / 28 per unit = 10; strided output has 35 steps, so 10 fits
    assert wl.config.output_frames(280) == 35
    assert batch["targets"].shape == (3, 10)
    assert wl.make_batch((3, 280, 12))["targets"].shape == (3, 12)
    # an infeasible target is clipped to half the output steps
    assert wl.make_batch((3, 280, 500))["targets"].shape == (3, 17)


def test_gnmt_lengths_come_from_the_signature() -> None:
    wl = load_workload("gnmt:tiny")
    b = wl.make_batch((5, 7, 9))
    assert b["src"].shape == (7, 5)
    assert b["tgt_in"].shape == (9, 5) and b["tgt_out"].shape == (9, 5)
    assert torch.equal(b["tgt_in"][1:], b["tgt_out"][:-1])  # teacher forcing shift
    assert wl.make_batch((5, 7, 0))["tgt_in"].shape == (7, 5)


def test_bert_masking_and_packed_mask() -> None:
    wl = load_workload("bert:tiny")
    b = wl.make_batch((2, 40, 0))
    assert b["masked_positions"].shape == (2, 6)  # 15% of 40
    assert (torch.gather(b["input_ids"], 1, b["masked_positions"]) == 4).all()
    packed = wl.make_batch((2, 40, 0, 2 * 400))
    mask = packed["attention_mask"]
    assert mask.shape == (2, 1, 40, 40)
    lens = packed_document_lengths(40, 400)
    assert sum(lens) == 40
    assert (mask[0, 0, 0, : lens[0]] == 0).all() and (mask[0, 0, 0, lens[0] :] < 0).all()
    # positions restart at every document
    assert packed["positions"][0, lens[0]].item() == 0
    assert math.isfinite(wl.step(packed))


@pytest.mark.parametrize(
    ("seq_len", "sum_sq", "expected"),
    [
        (10, 100, [10]),
        (10, 10, [1] * 10),
        (10, 52, [7, 1, 1, 1]),
        (6, 18, [4, 1, 1]),
        (5, 13, [3, 2]),
    ],
)
def test_packed_document_lengths_exact(seq_len: int, sum_sq: int, expected: list[int]) -> None:
    lens = packed_document_lengths(seq_len, sum_sq)
    assert sum(lens) == seq_len
    assert sum(n * n for n in lens) <= max(sum_sq, seq_len)
    assert lens == expected


def test_packed_document_lengths_property() -> None:
    from hypothesis import given
    from hypothesis import strategies as st

    @given(st.integers(1, 300), st.integers(0, 100_000))
    def check(seq_len: int, sum_sq: int) -> None:
        lens = packed_document_lengths(seq_len, sum_sq)
        assert sum(lens) == seq_len and min(lens) >= 1
        assert sum(n * n for n in lens) <= max(sum_sq, seq_len)

    check()


def test_micro_batches_give_the_same_first_loss() -> None:
    for spec in ("bert:tiny", "gnmt:tiny"):
        sig = (4, 12, 10)
        one = load_workload(spec)
        two = load_workload(spec, {"micro_batches": 2})
        batch = one.make_batch(sig)
        assert two.step(batch) == pytest.approx(one.step(batch), rel=1e-5)


@pytest.mark.parametrize("opt", ["sgd", "adam", "adamw", "lamb"])
def test_every_optimizer_trains(opt: str) -> None:
    wl = load_workload("bert:tiny", {"optimizer": opt, "lr": 0.01})
    batch = wl.make_batch((2, 16, 0))
    losses = [wl.step(batch) for _ in range(4)]
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("spec", sorted(SIGS))
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_autocast_dtypes_run_on_cpu(spec: str, dtype: str) -> None:
    wl = load_workload(spec, {"dtype": dtype, "threads": 1})
    ref = load_workload(spec, {"threads": 1})
    batch = wl.make_batch(SIGS[spec])
    loss = wl.step(batch)
    assert math.isfinite(loss)
    assert loss == pytest.approx(ref.step(batch), rel=0.05)


def test_gnmt_lstms_run_in_the_autocast_dtype() -> None:
    # oneDNN's CPU LSTM fails under bf16 autocast when fed fp32 (the embeddings); the
    # workload casts the input, so every LSTM computes in bf16, not silently in fp32.
    wl = load_workload("gnmt:tiny", {"dtype": "bf16", "threads": 1})
    out_dtypes = []
    for m in wl.model.modules():
        if isinstance(m, torch.nn.LSTM):
            m.register_forward_hook(lambda mod, i, o: out_dtypes.append(o[0].dtype))
    losses = [wl.step(wl.make_batch((4, 10, 12))) for _ in range(3)]
    assert out_dtypes and set(out_dtypes) == {torch.bfloat16}
    assert losses[-1] < losses[0]


def test_threads_setting_is_applied() -> None:
    load_workload("bert:tiny", {"threads": 2})
    assert torch.get_num_threads() == 2
    torch.set_num_threads(1)


def test_cudnn_benchmark_is_the_steps_own_and_the_processs_is_kept() -> None:
    # A user's process set benchmark = True; building and stepping workloads leaves it so.
    was = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        seen: list[bool] = []
        on, off, inherit = (load_workload("deepspeech2:tiny", {} if v is None else {"cudnn_benchmark": v})
                            for v in (True, False, None))
        assert torch.backends.cudnn.benchmark is True  # building sets nothing
        for wl in (on, off, inherit):
            real = wl.model.forward
            wl.model.forward = lambda *a, real=real, **k: (seen.append(torch.backends.cudnn.benchmark), real(*a, **k))[1]
            wl.step(wl.make_batch(SIGS["deepspeech2:tiny"]))
            assert torch.backends.cudnn.benchmark is True  # the process's flag back after each step
        assert seen == [True, False, True]  # its own during the step; None: the process's
        # cached apart; the default (None) keeps the keys cached before the field existed
        assert on.config.to_dict()["cudnn_benchmark"] is True and off.config.to_dict()["cudnn_benchmark"] is False
        assert "cudnn_benchmark" not in inherit.config.to_dict()
    finally:
        torch.backends.cudnn.benchmark = was


def test_building_a_workload_leaves_every_generator_as_found() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    load_workload("bert:tiny", {"seed": 7})  # seeds the CPU generator for its weights only
    assert torch.equal(torch.rand(3), expected)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(5)
        cuda = torch.cuda.get_rng_state_all()
        load_workload("bert:tiny", {"device": "cuda", "seed": 7})
        assert all(torch.equal(a, b) for a, b in zip(torch.cuda.get_rng_state_all(), cuda, strict=True))


def test_cudnn_benchmark_must_be_a_bool() -> None:
    with pytest.raises(ConfigError, match=r"^The 'cudnn_benchmark' parameter of GNMTConfig must be a bool or None\. Got 1\.$"):
        GNMTConfig(cudnn_benchmark=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'cudnn_benchmark' parameter of BertConfig must be a bool"):
        load_workload("bert:tiny", {"cudnn_benchmark": "maybe"})


def test_compile_with_eager_backend() -> None:
    wl = load_workload("bert:tiny", {"compile": "true", "compile_backend": "eager"})
    batch = wl.make_batch((2, 8, 0))
    assert math.isfinite(wl.step(batch))


def test_compile_dynamic_reaches_torch_compile() -> None:
    from torch._dynamo.utils import counters

    lengths = (16, 24, 32, 40)
    frames = {}
    for dynamic in ("true", "false"):
        wl = load_workload("bert:tiny", {"compile": "true", "compile_backend": "eager", "compile_dynamic": dynamic})
        assert wl.config.compile_dynamic is (dynamic == "true")
        torch._dynamo.reset()
        counters.clear()
        for n in lengths:
            assert math.isfinite(wl.step(wl.make_batch((2, n, 0))))
        frames[dynamic] = counters["frames"]["total"]
    # Static shapes trace every new length again; dynamic ones at most once more (torch
    # specialises a size that equals another, "duck sizing", and retraces when it parts).
    assert frames["false"] == len(lengths) and frames["true"] < len(lengths)


def test_presets_exist_with_paper_sizes() -> None:
    for name in WORKLOADS.names():
        assert {"tiny", "small", "paper"} <= set(WORKLOADS.get(name).Config.PRESETS)
    ds2 = DeepSpeech2Config.PRESETS["paper"]
    assert (ds2.rnn_layers, ds2.rnn_hidden, ds2.rnn_type) == (5, 800, "gru")
    assert GNMTConfig.PRESETS["paper"].hidden == 1024
    large = BertConfig.PRESETS["paper"]
    assert (large.layers, large.hidden, large.heads, large.optimizer) == (24, 1024, 16, "lamb")


def test_load_workload_overrides_are_typed() -> None:
    wl = load_workload(
        "deepspeech2:tiny",
        {"threads": "1", "lr": "0.5", "compile": "false", "time_strides": "2,2", "dtype": "bf16"},
    )
    cfg = wl.config
    assert (cfg.threads, cfg.lr, cfg.compile, cfg.time_strides, cfg.dtype) == (
        1,
        0.5,
        False,
        (2, 2),
        "bf16",
    )
    assert wl.name == "deepspeech2:tiny"
    assert load_workload("gnmt").name == "gnmt"


@pytest.mark.parametrize(
    ("spec", "overrides", "match"),
    [
        ("nope", {}, "Unknown workload 'nope'. Valid names: bert, deepspeech2, gnmt"),
        (
            "bert:huge",
            {},
            "Unknown preset 'huge' of workload 'bert'. Valid presets: tiny, small, base, paper",
        ),
        (
            "bert:tiny",
            {"colour": "red"},
            "Unknown workload setting 'colour' for BertConfig. Valid keys: ",
        ),
        (
            "bert:tiny",
            {"threads": "two"},
            "'threads' parameter of BertConfig must be an int. Got 'two'",
        ),
        ("bert:tiny", {"lr": "fast"}, "'lr' parameter of BertConfig must be a number"),
        ("bert:tiny", {"compile": "maybe"}, "'compile' parameter of BertConfig must be a bool"),
        ("bert:tiny", {"compile_dynamic": "maybe"}, "'compile_dynamic' parameter of BertConfig must be a bool"),
        (
            "bert:tiny",
            {"dtype": "fp8"},
            "'dtype' parameter of BertConfig must be one of fp32, tf32, bf16, fp16",
        ),
        (
            "bert:tiny",
            {"device": "tpu"},
            "'device' parameter of BertConfig must be one of cpu, cuda",
        ),
        (
            "bert:tiny",
            {"optimizer": "adagrad"},
            "'optimizer' parameter of BertConfig must be one of",
        ),
        (
            "bert:tiny",
            {"threads": -1},
            "'threads' parameter of BertConfig must be an int >= 0 and <= 1,024. Got -1",
        ),
        (
            "bert:tiny",
            {"micro_batches": 0},
            "'micro_batches' parameter of BertConfig must be an int >= 1",
        ),
        ("bert:tiny", {"lr": 0}, "'lr' parameter of BertConfig must be a float > 0"),
        ("bert:tiny", {"heads": 3}, "'heads' parameter of BertConfig must divide hidden=32"),
        ("bert:tiny", {"dropout": 1.5}, "'dropout' parameter of BertConfig must be in"),
        ("bert:tiny", {"mlm_fraction": 0}, "'mlm_fraction' parameter of BertConfig must be in"),
        ("bert:tiny", {"vocab": 2}, "'vocab' parameter of BertConfig must be an int >= 5"),
        (
            "deepspeech2:tiny",
            {"rnn_type": "rnn"},
            "'rnn_type' parameter of DeepSpeech2Config must be one of 'gru', 'lstm'",
        ),
        (
            "deepspeech2:tiny",
            {"time_strides": "0,2"},
            "'time_strides' parameter of DeepSpeech2Config must be two ints",
        ),
        (
            "deepspeech2:tiny",
            {"rnn_layers": 0},
            "'rnn_layers' parameter of DeepSpeech2Config must be an int >= 1",
        ),
        (
            "deepspeech2:tiny",
            {"vocab": 1},
            "'vocab' parameter of DeepSpeech2Config must be an int >= 2",
        ),
        ("gnmt:tiny", {"layers": 1}, "'layers' parameter of GNMTConfig must be an int >= 2"),
        (
            "gnmt:tiny",
            {"label_smoothing": 1.0},
            "'label_smoothing' parameter of GNMTConfig must be in",
        ),
        ("gnmt:tiny", {"vocab": 1}, "'vocab' parameter of GNMTConfig must be an int >= 2"),
        ("no_such_module_x:make", {}, "cannot import module 'no_such_module_x'"),
        ("math:nothing_here", {}, "'math' has no function 'nothing_here'"),
    ],
)
def test_load_workload_errors(spec: str, overrides: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match.replace("(", r"\(").replace(")", r"\)")):
        load_workload(spec, overrides)


def test_cuda_device_without_gpu_is_a_config_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(
        ConfigError, match="device 'cuda' was asked for but torch sees no CUDA device"
    ):
        load_workload("bert:tiny", {"device": "cuda"})


@pytest.mark.gpu
@pytest.mark.parametrize("spec", sorted(SIGS))
def test_workloads_train_on_cuda(spec: str) -> None:
    wl = load_workload(spec, {"device": "cuda", "dtype": "bf16"})
    batch = wl.make_batch(SIGS[spec])
    assert batch[next(iter(batch))].device.type == "cuda"
    losses = [wl.step(batch) for _ in range(4)]
    assert losses[-1] < losses[0]


def test_bad_signatures() -> None:
    wl = load_workload("bert:tiny")
    with pytest.raises(InputError, match="is \\(batch_size, seq_len, tgt_len\\[, sum_sq_len\\]\\)"):
        wl.make_batch((2, 8))
    with pytest.raises(InputError, match="needs batch_size >= 1, seq_len >= 1"):
        wl.make_batch((0, 8, 0))
    with pytest.raises(InputError, match="seq_len 600 exceeds max_position=512"):
        load_workload("bert:tiny").make_batch((1, 600, 0))


def test_user_workload_module_function(tmp_path, monkeypatch) -> None:
    (tmp_path / "my_wl.py").write_text(
        textwrap.dedent(
            """
            from seqpoint.workloads import load_workload

            def make(**overrides):
                wl = load_workload("bert:tiny", overrides)
                wl.name = "my_wl:make"
                return wl

            def bad(**overrides):
                return 42
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    wl = load_workload("my_wl:make", {"threads": "1"})
    assert wl.name == "my_wl:make"
    assert math.isfinite(wl.step(wl.make_batch((2, 8, 0))))
    with pytest.raises(ConfigError, match="returned int, which lacks"):
        load_workload("my_wl:bad")


def test_import_does_not_import_torch() -> None:
    code = "import sys, seqpoint.workloads, seqpoint.profiling, seqpoint.cache; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_config_to_dict_round_trip() -> None:
    cfg = BertConfig.PRESETS["tiny"]
    d = cfg.to_dict()
    assert d["hidden"] == 32 and d["optimizer"] == "lamb"
    assert dataclasses.replace(cfg) == BertConfig(**d)
