"""Projection onto another GPU: each category scaled by the ratio of its modeled times, the
rest of the step kept, exact on hand-built runs; the interval takes every category's ratio
off by the model's error on ratios either way."""

from __future__ import annotations

import dataclasses
import math

import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.measurements import Measurements
from seqpoint.projection import project, project_device
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints, SeqPointSelector
from seqpoint.testing import toy_measurements

#: The model's error on a ratio between two GPUs, for these tests.
BAND = 0.1


def run() -> tuple[IterationSchedule, SeqPoints, Measurements]:
    sched = IterationSchedule.from_columns({"batch_size": [4] * 6, "seq_len": [10, 20, 10, 30, 20, 10]})
    points = SeqPointSelector(n_points=3).fit(sched).to_seqpoints(sched)
    ms = toy_measurements(points, lambda p: 0.01 * p.seq_len, time_s_iqr=lambda p: 0.0)
    # 60% GEMM, 30% element-wise, 10% outside the operators (kept)
    with_bd = [dataclasses.replace(m, breakdown_s={"gemm": 0.6 * m.metrics["time_s"],
                                                    "elementwise": 0.3 * m.metrics["time_s"]})
               for m in ms.measurements]
    return sched, points, dataclasses.replace(ms, measurements=tuple(with_bd))


def modeled(points: SeqPoints) -> dict[tuple[int, ...], dict[str, dict[str, float]]]:
    # A memory upgrade: GEMM compute-bound on both (ratio 1), element-wise memory-bound (ratio 0.5).
    return {p.signature: {"src": {"gemm": 2.0, "elementwise": 1.0}, "dst": {"gemm": 2.0, "elementwise": 0.5}}
            for p in points.points}


def test_each_category_moves_by_its_modeled_ratio_and_the_rest_is_kept() -> None:
    sched, points, ms = run()
    dp = project_device(sched, points, ms, modeled(points), profiled_on="src", device="dst", ratio_error=BAND)
    src = project(sched, points, ms)
    assert dp.metric == "time_s" and dp.profiled_total == pytest.approx(src.totals["time_s"])
    # every step: 0.6 t · 1 + 0.3 t · 0.5 + 0.1 t = 0.85 t
    assert dp.total == pytest.approx(0.85 * src.totals["time_s"])
    assert dp.speedup == pytest.approx(1 / 0.85)
    assert dp.kept_share == pytest.approx(0.1)
    bd = dp.projection.totals
    assert bd["breakdown_s.gemm"] == pytest.approx(src.totals["breakdown_s.gemm"])
    assert bd["breakdown_s.elementwise"] == pytest.approx(0.5 * src.totals["breakdown_s.elementwise"])
    # The band: every moved category's ratio 10% lower or higher (0.75 t of the step moved, 0.1 t kept).
    lo, hi = dp.interval
    assert lo == pytest.approx(0.775 * src.totals["time_s"]) and hi == pytest.approx(0.925 * src.totals["time_s"])
    s_lo, s_hi = dp.speedup_interval
    assert s_lo == pytest.approx(1 / 0.925) and s_hi == pytest.approx(1 / 0.775)
    d = dp.to_dict()
    assert (d["profiled_on"], d["device"], d["total"]) == ("src", "dst", pytest.approx(dp.total))


def test_the_interval_keeps_the_projections_own_noise_around_the_band() -> None:
    sched, points, ms = run()
    noisy = Measurements(workload=ms.workload, measurements=tuple(
        dataclasses.replace(m, metrics={**m.metrics, "time_s_iqr": 0.2 * m.metrics["time_s"]})
        for m in ms.measurements))
    dp = project_device(sched, points, noisy, modeled(points), profiled_on="src", device="dst", ratio_error=BAND)
    own = dp.projection.interval["time_s"]
    assert dp.interval[0] < min(own[0], 0.775 * dp.profiled_total)
    assert dp.interval[1] > max(own[1], 0.925 * dp.profiled_total)


def test_a_category_the_count_does_not_see_is_kept_as_measured() -> None:
    sched, points, ms = run()
    only_gemm = {sig: {d: {"gemm": v["gemm"]} for d, v in per.items()} for sig, per in modeled(points).items()}
    dp = project_device(sched, points, ms, only_gemm, profiled_on="src", device="dst", ratio_error=BAND)
    assert dp.total == pytest.approx(dp.profiled_total)
    assert dp.kept_share == pytest.approx(0.4)


def test_first_steps_and_spread_move_with_the_step() -> None:
    sched, points, ms = run()
    cold = Measurements(workload=ms.workload, measurements=tuple(
        dataclasses.replace(m, metrics={**m.metrics, "time_s_first": 3 * m.metrics["time_s"], "time_s_n": 5.0})
        for m in ms.measurements))
    dp = project_device(sched, points, cold, modeled(points), profiled_on="src", device="dst", ratio_error=BAND)
    src = project(sched, points, cold)
    assert dp.metric == "run_time_s"
    assert dp.total == pytest.approx(0.85 * src.totals["run_time_s"])
    assert dp.projection.totals["first_occurrence_s"] == pytest.approx(0.85 * src.totals["first_occurrence_s"])


def test_points_without_breakdown_or_seconds_are_refused() -> None:
    sched, points, _ = run()
    bare = toy_measurements(points, lambda p: 0.01 * p.seq_len)
    with pytest.raises(ConfigError, match="add \"breakdown\" to \\[profile\\] metrics"):
        project_device(sched, points, bare, modeled(points), profiled_on="src", device="dst", ratio_error=BAND)
    counted = toy_measurements(points, lambda p: 1e6 * p.seq_len, metric="instructions")
    with pytest.raises(ConfigError, match="clock timer"):
        project_device(sched, points, counted, modeled(points), profiled_on="src", device="dst", ratio_error=BAND)


def test_the_speedup_interval_is_open_when_the_interval_reaches_zero() -> None:
    sched, points, ms = run()
    dp = project_device(sched, points, ms, modeled(points), profiled_on="src", device="dst", ratio_error=BAND)
    zero = dataclasses.replace(dp, interval=(0.0, dp.interval[1]))
    assert math.isinf(zero.speedup_interval[1])


def test_a_run_projected_from_the_device_model_carries_its_error_in_the_interval() -> None:
    from seqpoint.devices import MODEL

    sched, points, _ = run()
    ms = toy_measurements(points, lambda p: 1e-3 * p.seq_len, metric="model_h100_s")
    proj = project(sched, points, ms)
    total, (lo, hi) = proj.totals["model_h100_s"], proj.interval["model_h100_s"]
    own = proj.representation["model_h100_s"] + proj.noise["model_h100_s"]
    assert hi - total == pytest.approx(own + MODEL.error * total) and total - lo == pytest.approx(hi - total)
    plain = project(sched, points, toy_measurements(points, lambda p: 1e-3 * p.seq_len, metric="roofline_h100_s"))
    assert plain.interval["roofline_h100_s"][1] - plain.totals["roofline_h100_s"] == pytest.approx(own)
