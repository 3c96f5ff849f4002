"""Device description files: every shipped GPU is complete and sourced, the original three
keep their data-sheet numbers, each precision has its peak (TF32 on tensor cores, bf16
refused where a GPU has none), and a user's own file works end to end or fails in one line."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from seqpoint.devices import GPU_SPECS, resolve_device
from seqpoint.exceptions import ConfigError
from seqpoint.profiling import ProfileConfig

SHIPPED = resources.files("seqpoint").joinpath("data", "devices")
FIELDS = ("name", "cuda_names", "tensor_flops", "cuda_flops", "bandwidth", "memory_gb", "sm_count", "boost_clock_mhz")


def _h100_text() -> str:
    return SHIPPED.joinpath("h100.toml").read_text(encoding="utf-8")


def test_every_shipped_file_loads_with_every_field_and_its_source() -> None:
    files = {f.name.removesuffix(".toml") for f in SHIPPED.iterdir() if f.name.endswith(".toml")}
    assert files == set(GPU_SPECS) == {"v100", "v100-32gb", "a40", "a100-40gb", "a100", "h100", "h100-pcie", "h200",
                                       "b200", "l4"}
    # FP32 lanes per SM: 64 on Volta and GA100, 128 on GA102 (A40), Hopper, Ada and Blackwell.
    lanes = {"v100": 64, "v100-32gb": 64, "a100-40gb": 64, "a100": 64}
    for key, spec in GPU_SPECS.items():
        for name in FIELDS:
            assert getattr(spec, name), (key, name)
            assert spec.sources.get(name), (key, name)
        assert set(spec.sources) <= {*FIELDS, "l2_mb", "memory_clock_mhz"}, key
        for optional in ("l2_mb", "memory_clock_mhz"):  # given with its source, or left out (B200's L2)
            assert (getattr(spec, optional) is None) == (optional not in spec.sources), (key, optional)
        # The data sheet's FP32 rate is SMs x lanes x 2 FLOPs x boost clock (within 1%).
        clock_rate = spec.sm_count * lanes.get(key, 128) * 2 * spec.boost_clock_mhz * 1e6  # type: ignore[operator]
        assert spec.cuda_flops["fp32"] == pytest.approx(clock_rate, rel=0.01), key
        assert min(spec.tensor_flops.values()) > spec.cuda_flops["fp32"], key


def test_the_original_three_keep_their_numbers_and_each_precision_its_peak() -> None:
    v100, a100, h100 = (GPU_SPECS[g] for g in ("v100", "a100", "h100"))
    assert [a100.peak(p) for p in ("fp32", "tf32", "bf16", "fp16")] == [19.5e12, 156e12, 312e12, 312e12]
    assert [h100.peak(p) for p in ("fp32", "tf32", "bf16", "fp16")] == [67e12, 494.7e12, 989.4e12, 989.4e12]
    # Volta: TF32-allowed math runs in fp32 on CUDA cores; fp16 on tensor cores; no bf16 at all
    assert [v100.peak(p) for p in ("fp32", "tf32", "fp16")] == [15.7e12, 15.7e12, 125e12]
    assert not v100.supports("bf16") and a100.supports("bf16") and v100.supports("tf32")
    with pytest.raises(ConfigError, match=r"The V100 SXM2 16GB has no bf16 arithmetic .*use dtype = \"fp16\""):
        v100.peak("bf16")
    assert [GPU_SPECS[g].bandwidth for g in ("v100", "a100", "h100")] == [900e9, 2039e9, 3.35e12]
    assert [GPU_SPECS[g].name for g in ("v100", "a100", "h100")] == ["V100 SXM2 16GB", "A100 80GB SXM", "H100 SXM5"]
    # The V100's two memory sizes are two files, told apart by the name CUDA gives each.
    assert (v100.memory_gb, GPU_SPECS["v100-32gb"].memory_gb) == (16, 32)
    assert v100.cuda_names == ("Tesla V100-SXM2-16GB",) and GPU_SPECS["v100-32gb"].cuda_names == ("Tesla V100-SXM2-32GB",)
    # H200: the H100 SXM's compute with 4.8 TB/s of HBM3e; the PCIe H100 is slower in both.
    assert GPU_SPECS["h200"].tensor_flops == h100.tensor_flops and GPU_SPECS["h200"].cuda_flops == h100.cuda_flops
    assert GPU_SPECS["h200"].bandwidth / h100.bandwidth == pytest.approx(1.43, abs=0.005)
    assert GPU_SPECS["h100-pcie"].bandwidth == 2e12 < h100.bandwidth
    # B200, newer than every measurement the model is checked on: 2.27x the H100's bf16, 2.39x its bandwidth.
    b200 = GPU_SPECS["b200"]
    assert (b200.peak("bf16"), b200.bandwidth, b200.l2_mb) == (2.25e15, 8e12, None)
    # Hopper's two clocks are said: FP32 at 1,980 MHz, tensor work at 1,830 MHz.
    for g in ("h100", "h200"):
        assert "1,830 MHz" in GPU_SPECS[g].sources["boost_clock_mhz"], g


def test_a_users_file_works_end_to_end_in_the_roofline(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from seqpoint.profiling import Profiler, count_point
    from seqpoint.workflows import SelectionSection, model_cost
    from seqpoint.workloads import load_workload

    same = tmp_path / "mine.toml"
    same.write_text(_h100_text(), encoding="utf-8")
    slow = tmp_path / "slow-h100.toml"
    slow.write_text(_h100_text().replace("bandwidth = 3.35e12", "bandwidth = 0.5e12"), encoding="utf-8")
    wl = load_workload("bert:tiny")
    m = count_point(wl, (2, 20, 0), devices=[str(same), str(slow)])
    assert m["roofline_mine_s"] == m["roofline_h100_s"]
    assert m["roofline_slow-h100_s"] > m["roofline_h100_s"]
    point = Profiler(wl).point((2, 20, 0), ProfileConfig(metrics=(f"roofline:{same}",)))
    assert point.metrics == {"roofline_mine_s": m["roofline_h100_s"]}
    sched_rows = [(2, 10), (2, 30), (4, 10)]
    from seqpoint.schedule import IterationSchedule

    sched = IterationSchedule.from_columns({"batch_size": [b for b, _ in sched_rows],
                                            "seq_len": [s for _, s in sched_rows], "tgt_len": [0] * 3})
    proxy = model_cost(SelectionSection(proxy="model", proxy_device=str(slow)), sched, wl)
    assert proxy is not None
    want = [count_point(wl, (b, s, 0), devices=[str(slow)])["roofline_slow-h100_s"] for b, s in sched_rows]
    np.testing.assert_allclose(proxy(sched), want, rtol=1e-12)


def test_an_edited_device_file_changes_the_cache_key(tmp_path: Path) -> None:
    f = tmp_path / "mine.toml"
    f.write_text(_h100_text(), encoding="utf-8")
    config = ProfileConfig(metrics=(f"roofline:{f}",))
    before = config.to_dict()
    f.write_text(_h100_text().replace("l2_mb = 50", "l2_mb = 60"), encoding="utf-8")
    assert config.to_dict() != before
    assert "device_files" not in ProfileConfig(metrics=("roofline:h100",)).to_dict()


@pytest.mark.parametrize(("edit", "message"), [
    (("bandwidth = 3.35e12\n", ""), r"bad\.toml: field 'bandwidth' is missing; give the memory bandwidth in bytes/s"),
    (("sm_count = 132", 'sm_count = "132"'), r"bad\.toml: field 'sm_count' must be a number > 0, got '132'"),
    (("fp32 = 67e12", "fp32 = -1"), r"field 'cuda_flops.fp32' must be a number > 0, got -1; give CUDA-core"),
    (("fp16 = 989.4e12", "fp8 = 1979e12"), r"bad\.toml: unknown dtype tensor_flops\.fp8; give any of fp32"),
    (("l2_mb", "l2_kb"), r"bad\.toml: unknown field 'l2_kb'; the fields are name, bandwidth"),
    (("name = ", "name "), r"bad\.toml is not valid TOML \(Expected '=' after a key"),
])
def test_a_bad_file_fails_in_one_line_naming_the_file_and_the_field(
    tmp_path: Path, edit: tuple[str, str], message: str,
) -> None:
    bad = tmp_path / "bad.toml"
    text = _h100_text()
    assert edit[0] in text
    bad.write_text(text.replace(edit[0], edit[1], 1), encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as err:
        resolve_device(str(bad))
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=message):
        ProfileConfig(metrics=(f"roofline:{bad}",))


def test_device_names_are_checked_where_they_are_given(tmp_path: Path) -> None:
    from seqpoint.workflows import SelectionSection

    with pytest.raises(ConfigError, match=r"Cannot read device file .*nothere\.toml \(No such file"):
        ProfileConfig(metrics=(f"roofline:{tmp_path / 'nothere.toml'}",))
    with pytest.raises(ConfigError, match=r"\[selection\].*Cannot read device file .*nothere\.toml"):
        SelectionSection(proxy="model", proxy_device=str(tmp_path / "nothere.toml"))
    with pytest.raises(ConfigError, match=r"proxy_device.*'l4', 'v100', 'v100-32gb' or a device file"):
        SelectionSection(proxy="model", proxy_device="b300")
    shadow = tmp_path / "H100.toml"
    shadow.write_text(_h100_text(), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"H100\.toml: its name 'h100' must differ from the shipped devices"):
        ProfileConfig(metrics=(f"roofline:{shadow}",))
    with pytest.raises(ConfigError, match=r"Unknown GPU '.*mine\.json'\. Valid GPUs: a100, .* or a device file"):
        ProfileConfig(metrics=(f"roofline:{tmp_path / 'mine.json'}",))
    assert SelectionSection(proxy="model", proxy_device="h200").proxy_device == "h200"
