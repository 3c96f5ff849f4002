"""The device model's arithmetic on hand-built counts, exactly: the p-norm of compute and
memory time, the tile rounding, the kernels' fixed cost; the roofline is its bound."""

from __future__ import annotations

import math

import pytest

from seqpoint.devices import GPU_SPECS, MODEL, ROOFLINE, DeviceModel, Target, model_band

#: Round constants, so each expected time is written out by hand.
TOY = DeviceModel(matmul=0.5, matmul_memory=0.5, memory=0.25, kernel_s=1e-6, overlap=2.0, tile=64, error=0.1,
                  ratio_error=0.05)


def test_a_matrix_product_joins_compute_and_memory_time_and_pays_its_kernels() -> None:
    # 2 TFLOP at half of 1 PFLOP/s: 4 ms; 3 GB at half of 1 TB/s: 6 ms; p = 2 joins them
    t = TOY.seconds(1e15, 1e12, 2e12, 3e9, kernels=2.0, shape=(128, 64))
    assert t == pytest.approx(math.sqrt(4e-3**2 + 6e-3**2) + 2e-6, rel=1e-12)
    # The output's rows and columns are rounded up to whole 64 x 64 tiles: 100 x 64 runs as 128 x 64.
    padded = TOY.seconds(1e15, 1e12, 2e12, 0.0, kernels=0.0, shape=(100, 64))
    assert padded == pytest.approx(4e-3 * 128 / 100, rel=1e-12)


def test_a_memory_bound_operator_streams_at_its_own_fraction() -> None:
    assert TOY.seconds(1e15, 1e12, 0.0, 1e9) == pytest.approx(1e9 / (0.25 * 1e12) + 1e-6, rel=1e-12)
    assert TOY.seconds(1e15, 1e12, 0.0, 0.0, kernels=3.0) == pytest.approx(3e-6, rel=1e-12)


def test_the_roofline_is_the_model_at_the_data_sheet() -> None:
    assert ROOFLINE.seconds(1e15, 1e12, 2e12, 3e9, kernels=5.0, shape=(100, 7)) == 3e-3  # max(2 ms, 3 ms)
    assert ROOFLINE.seconds(1e15, 1e12, 8e12, 3e9) == 8e-3
    # the fitted model is never faster than the bound
    for flops, nbytes in ((2e12, 3e9), (1e6, 1e9), (0.0, 5e6)):
        assert MODEL.seconds(1e15, 1e12, flops, nbytes) > ROOFLINE.seconds(1e15, 1e12, flops, nbytes)


def test_a_target_times_each_precision_at_its_peak() -> None:
    a100 = Target.of(GPU_SPECS["a100"], TOY)
    assert dict(a100.peaks) == {"fp32": 19.5e12, "tf32": 156e12, "bf16": 312e12, "fp16": 312e12}
    assert a100.peak(None) == 19.5e12  # an operator without tensor-core math
    tf32, fp32 = (a100.seconds(p, 1e12, 0.0, kernels=0.0) for p in ("tf32", "fp32"))
    assert (tf32, fp32) == (pytest.approx(1e12 / (0.5 * 156e12)), pytest.approx(1e12 / (0.5 * 19.5e12)))
    # a V100 has no bf16: the bf16 precision is not among its peaks
    assert "bf16" not in dict(Target.of(GPU_SPECS["v100"]).peaks)
    cpu = Target.flat(1e11, 2e10)
    assert {f for _, f in cpu.peaks} == {1e11} and cpu.model is ROOFLINE


def test_the_model_band_is_its_measured_error_on_its_own_metrics_only() -> None:
    assert model_band("model_h100_s") == MODEL.error > 0
    assert model_band("roofline_h100_s") == model_band("time_s") == 0.0
