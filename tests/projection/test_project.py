"""Projection: exact totals on hand-built schedules, intervals, failures, validation."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from seqpoint.exceptions import ConfigError, InputError
from seqpoint.profiling import Measurement, Measurements
from seqpoint.projection import (
    geomean_abs_error,
    project,
    project_cost,
    project_speedup,
    relative_error,
)
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import FirstSelector, SeqPoint, SeqPoints, SeqPointSelector

Z95 = 1.959963984540054


@pytest.fixture
def tiny() -> IterationSchedule:
    return IterationSchedule.from_columns(
        {"batch_size": np.ones(8, dtype=np.int64), "seq_len": [10, 10, 10, 20, 20, 30, 100, 100]}
    )


def linear(tokens: int) -> float:
    return 0.5 + 0.01 * tokens


def measure(points: SeqPoints, fn=linear, **extra) -> Measurements:  # type: ignore[no-untyped-def]
    ms = []
    for p in points.points:
        kw = {k: v(p) for k, v in extra.items()}
        ms.append(
            Measurement(
                iteration=p.iteration,
                batch_size=p.batch_size,
                seq_len=p.seq_len,
                tgt_len=p.tgt_len,
                metrics={"time_s": fn(p.batch_size * (p.seq_len + p.tgt_len)), "time_s_iqr": 0.0},
                **kw,
            )
        )
    return Measurements(workload="test", measurements=tuple(ms))


def two_points(tiny: IterationSchedule) -> SeqPoints:
    return SeqPointSelector(n_points=2, cost="tokens").fit(tiny).to_seqpoints(tiny)


def test_weighted_and_interpolated_exact_values(tiny: IterationSchedule) -> None:
    sp = two_points(tiny)  # seq_len 20 weight 6, seq_len 100 weight 2
    ms = measure(sp)
    w = project(tiny, sp, ms)
    assert w.totals == {"time_s": pytest.approx(6 * 0.7 + 2 * 1.5)}
    # Linear in tokens with two points: the interpolated projection is exact (8·0.5 + 3.0).
    i = project(tiny, sp, ms, method="interpolated")
    assert i.totals["time_s"] == pytest.approx(7.0)
    # The representation half-width is the disagreement of the two projections.
    assert w.interval["time_s"] == pytest.approx((7.0, 7.4))
    assert i.interval["time_s"] == pytest.approx((6.8, 7.2))
    assert w.complete and w.failed == () and w.n_points == 2
    assert w.to_dict() == {
        "n_iterations": 8,
        "projected": {"time_s": pytest.approx(7.2)},
        "interval": {"time_s": [pytest.approx(7.0), pytest.approx(7.4)]},
        "method": "weighted",
        "complete": True,
        "failed": [],
        "n_points": 2,
        "confidence": 0.95,
    }


def test_noise_from_repeats(tiny: IterationSchedule) -> None:
    sp = SeqPointSelector(n_points=4).fit(tiny).to_seqpoints(tiny)  # exact: no representation error
    ms = measure(sp, samples=lambda p: {"time_s": [0.6, 0.8]} if p.seq_len == 20 else {})
    res = project(tiny, sp, ms)
    se = np.std([0.6, 0.8], ddof=1) / np.sqrt(2)
    assert res.representation["time_s"] == pytest.approx(0.0, abs=1e-12)
    assert res.noise["time_s"] == pytest.approx(Z95 * 2 * se)  # weight of seq_len 20 is 2
    lo, hi = res.interval["time_s"]
    assert hi - lo == pytest.approx(2 * Z95 * 2 * se)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.1, 10.0), min_size=4, max_size=4))
def test_exact_when_every_signature_is_measured(values: list[float]) -> None:
    sched = IterationSchedule.from_columns({"batch_size": [1, 2, 1, 2, 1, 3], "seq_len": [5, 5, 9, 5, 5, 2]})
    sp = SeqPointSelector(n_points=4).fit(sched).to_seqpoints(sched)
    table = {p.signature: v for p, v in zip(sp.points, values, strict=True)}
    ms = Measurements(
        workload="t",
        measurements=tuple(
            Measurement(iteration=p.iteration, batch_size=p.batch_size, seq_len=p.seq_len, metrics={"time_s": table[p.signature]})
            for p in sp.points
        ),
    )
    true = sum(table[(int(b), int(s), 0)] for b, s in zip(sched.batch_size, sched.seq_len, strict=True))
    for method in ("weighted", "interpolated"):
        res = project(sched, sp, ms, method=method)
        assert res.totals["time_s"] == pytest.approx(true, rel=1e-12)
        assert res.interval["time_s"] == pytest.approx((true, true), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 8), st.integers(1, 50), st.integers(0, 9)), min_size=2, max_size=40),
    st.integers(2, 6),
    st.floats(0.0, 5.0),
    st.floats(0.01, 2.0),
)
def test_interpolated_exact_for_cost_linear_in_tokens(rows, k: int, a: float, b: float) -> None:  # type: ignore[no-untyped-def]
    arr = np.array(rows)
    sched = IterationSchedule.from_columns({"batch_size": arr[:, 0], "seq_len": arr[:, 1], "tgt_len": arr[:, 2]})
    k = min(k, len(sched))
    sel = FirstSelector(n_points=k).fit(sched)
    assume(len(set(sched.padded_tokens[sel.points_].tolist())) >= 2)
    cost = a + b * sched.padded_tokens.astype(float)
    assert project_cost(sched, sel, cost, method="interpolated") == pytest.approx(cost.sum(), rel=1e-9)


def test_failed_point_is_projected_from_the_rest(tiny: IterationSchedule) -> None:
    sp = SeqPointSelector(n_points=3, cost="tokens").fit(tiny).to_seqpoints(tiny)  # 10 ×3, 20 ×3, 100 ×2
    good = measure(sp)
    ms = Measurements(
        workload="t",
        measurements=tuple(
            Measurement(iteration=m.iteration, batch_size=1, seq_len=m.seq_len, status="oom", message="CUDA OOM")
            if m.seq_len == 100 else m
            for m in good.measurements
        ),
    )
    res = project(tiny, sp, ms)
    assert not res.complete and res.failed == (6,) and res.n_points == 2
    # The failed point gets the linear fit through the others: 0.5 + 0.01·100.
    assert res.totals["time_s"] == pytest.approx(3 * 0.6 + 3 * 0.7 + 2 * 1.5)
    assert not res.to_dict()["complete"]
    all_failed = Measurements(
        workload="t",
        measurements=tuple(
            Measurement(iteration=m.iteration, batch_size=1, seq_len=m.seq_len, status="error", message="boom")
            for m in good.measurements
        ),
    )
    with pytest.raises(InputError, match="Every SeqPoint failed to measure"):
        project(tiny, sp, all_failed)


def test_breakdown_peak_and_spread_metrics(tiny: IterationSchedule) -> None:
    sp = SeqPointSelector(n_points=4).fit(tiny).to_seqpoints(tiny)  # every signature
    ms = Measurements(
        workload="t",
        measurements=tuple(
            Measurement(
                iteration=p.iteration, batch_size=1, seq_len=p.seq_len,
                metrics={"time_s": 1.0, "time_s_iqr": 0.1, "peak_mem_bytes": float(p.seq_len * 100)},
                breakdown_s={"gemm": 0.5, **({"softmax": 0.25} if p.seq_len > 10 else {})},
            )
            for p in sp.points
        ),
    )
    res = project(tiny, sp, ms)
    assert set(res.totals) == {"time_s", "peak_mem_bytes", "breakdown_s.gemm", "breakdown_s.softmax"}
    assert res.totals["breakdown_s.gemm"] == pytest.approx(4.0)
    assert res.totals["breakdown_s.softmax"] == pytest.approx(5 * 0.25)
    assert res.totals["peak_mem_bytes"] == pytest.approx(10000.0)  # a maximum, not a sum
    only = project(tiny, sp, ms, metrics=["breakdown_s.gemm"])
    assert list(only.totals) == ["breakdown_s.gemm"]
    with pytest.raises(InputError, match=re.escape("Metric 'flops' is not in every ok measurement. Available: peak_mem_bytes, time_s, breakdown_s.gemm, breakdown_s.softmax.")):
        project(tiny, sp, ms, metrics=["flops"])


def seqpoints_with(**changes) -> SeqPoints:  # type: ignore[no-untyped-def]
    base = {"iteration": 3, "batch_size": 1, "seq_len": 20, "tgt_len": 0, "weight": 8.0}
    base.update(changes)
    return SeqPoints(method="seqpoint", n_iterations=int(base["weight"]), points=(SeqPoint(**base),))


@pytest.mark.parametrize(
    ("points", "message"),
    [
        (seqpoints_with(weight=9.0), "The SeqPoints were chosen for 9 iterations but the schedule has 8; run 'seqpoint select' on this schedule."),
        (seqpoints_with(iteration=50), "SeqPoint 0 has iteration 50, which is not in the schedule (iterations 0..7); the SeqPoints belong to another schedule."),
        (seqpoints_with(seq_len=21), "SeqPoint 0 (iteration 3) has signature (1, 21, 0) but the schedule's iteration 3 has (1, 20, 0); the SeqPoints belong to another schedule."),
    ],
)
def test_seqpoints_must_belong_to_the_schedule(tiny: IterationSchedule, points: SeqPoints, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        project(tiny, points, measure(points))


def test_missing_measurement_and_parameters(tiny: IterationSchedule) -> None:
    sp = two_points(tiny)
    partial = Measurements(workload="t", measurements=measure(sp).measurements[:1])
    with pytest.raises(InputError, match=re.escape("The measurements have no entry for SeqPoint 1 (iteration 6, signature (1, 100, 0)); profile the SeqPoints with 'seqpoint profile'.")):
        project(tiny, sp, partial)
    with pytest.raises(ConfigError, match=re.escape("The 'method' parameter of project must be one of 'weighted', 'interpolated'. Got 'mean'.")):
        project(tiny, sp, measure(sp), method="mean")
    with pytest.raises(ConfigError, match=re.escape("The 'confidence' parameter of project must be a float in (0, 1). Got 1.5.")):
        project(tiny, sp, measure(sp), confidence=1.5)


def test_project_cost(tiny: IterationSchedule) -> None:
    sel = SeqPointSelector(n_points=2, cost="tokens").fit(tiny)
    cost = np.array([linear(int(t)) for t in tiny.padded_tokens])
    assert project_cost(tiny, sel, cost) == pytest.approx(7.2)
    assert project_cost(tiny, sel.to_seqpoints(tiny), lambda s: cost) == pytest.approx(7.2)
    assert project_cost(tiny, sel, cost, method="interpolated") == pytest.approx(7.0)
    with pytest.raises(InputError, match=re.escape("project_cost needs one cost per iteration, shape (8,). Got (3,).")):
        project_cost(tiny, sel, np.ones(3))


def test_speedup(tiny: IterationSchedule) -> None:
    sp = two_points(tiny)

    def faster(t: int) -> float:
        return linear(t) / 2.5

    a = measure(sp, breakdown_s=lambda p: {"gemm": 1.0})
    b = measure(sp, fn=faster, breakdown_s=lambda p: {"gemm": 0.5})
    s = project_speedup(tiny, sp, a, b)
    assert s.value == pytest.approx(2.5)
    assert s.interval == pytest.approx((2.5, 2.5))
    assert s.per_category == {"breakdown_s.gemm": pytest.approx(2.0)}
    assert s.to_dict()["speedup"] == pytest.approx(2.5)
    with pytest.raises(InputError, match="Measurement set a has no metric 'flops'"):
        project_speedup(tiny, sp, a, b, metric="flops")


def test_error_helpers() -> None:
    assert relative_error(110.0, 100.0) == pytest.approx(0.1)
    assert relative_error([90.0, 100.0], [100.0, 100.0]).tolist() == pytest.approx([-0.1, 0.0])
    assert geomean_abs_error([0.01, -0.04]) == pytest.approx(0.02)
    assert geomean_abs_error([0.0, 0.5]) == 0.0
    with pytest.raises(InputError, match="non-zero true values"):
        relative_error(1.0, 0.0)
    with pytest.raises(InputError, match="needs at least one error"):
        geomean_abs_error([])
    with pytest.raises(InputError, match="non-finite error"):
        geomean_abs_error([np.nan])
