"""Projection: exact totals on hand-built schedules, intervals, failures, validation."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from seqpoint.exceptions import ConfigError, InputError
from seqpoint.measurements import Measurement, Measurements
from seqpoint.measurements.metrics import relative_error
from seqpoint.projection import (
    ScheduleModel,
    fitted_costs,
    project,
    project_cost,
    project_speedup,
    student_quantile,
)
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoint, SeqPoints, SeqPointSelector, make_selector
from seqpoint.testing import toy_schedule

Z95 = 1.959963984540054


@pytest.fixture
def tiny() -> IterationSchedule:
    return toy_schedule()


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
    # The two projections disagree by 0.2, but the selection's count-weight bound
    # b = 20/300 (tokens: 6·20 + 2·100 against 300) is wider: b·|T|/(1 − b) = |T|/14.
    assert w.representation["time_s"] == pytest.approx(7.2 / 14)
    assert w.interval["time_s"] == pytest.approx((7.2 - 7.2 / 14, 7.2 + 7.2 / 14))
    assert i.interval["time_s"] == pytest.approx((6.5, 7.5))
    assert w.complete and w.failed == () and w.n_points == 2
    assert w.to_dict() == {
        "n_iterations": 8,
        "projected": {"time_s": pytest.approx(7.2)},
        "interval": {"time_s": [pytest.approx(7.2 - 7.2 / 14), pytest.approx(7.2 + 7.2 / 14)]},
        "method": "weighted",
        "complete": True,
        "failed": [],
        "n_points": 2,
        "confidence": 0.95,
        "representation": {"time_s": pytest.approx(7.2 / 14)},
        "noise": {"time_s": 0.0},
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


def test_interval_low_end_is_cut_at_zero(tiny: IterationSchedule) -> None:
    # Two repeats far apart: the noise half-width exceeds the total, and no run takes
    # less than 0 s. The figure printed as "± x%" stays the full half-width.
    sp = SeqPointSelector(n_points=4).fit(tiny).to_seqpoints(tiny)
    ms = measure(sp, samples=lambda p: {"time_s": [0.01, 10.0]})
    res = project(tiny, sp, ms)
    total, half = res.totals["time_s"], res.noise["time_s"]
    assert half > total
    assert res.interval["time_s"] == (0.0, pytest.approx(total + half))
    assert res.relative_halfwidth("time_s") == pytest.approx(half / total)
    # The speedup of two such sets: a ratio is never negative either.
    s = project_speedup(tiny, sp, ms, measure(sp, samples=lambda p: {"time_s": [0.01, 10.0]}))
    assert s.interval[0] == 0.0
    assert s.relative_halfwidth() == pytest.approx((s.representation + s.noise) / s.value)


@pytest.mark.parametrize(
    ("df", "confidence", "table"),
    # Student's t from the printed tables (two-sided).
    [(1, 0.95, 12.7062), (2, 0.95, 4.3027), (3, 0.95, 3.1824), (4, 0.95, 2.7764), (9, 0.95, 2.2622),
     (30, 0.95, 2.0423), (1, 0.99, 63.6567), (2, 0.99, 9.9248), (5, 0.90, 2.0150), (10, 0.5, 0.6998)],
)
def test_student_quantile_matches_the_tables(df: int, confidence: float, table: float) -> None:
    assert student_quantile(confidence, df) == pytest.approx(table, abs=1e-4)


def test_student_quantile_tends_to_the_normal() -> None:
    assert student_quantile(0.95, 5000) == pytest.approx(Z95, rel=1e-3)


@pytest.mark.parametrize(("confidence", "df", "message"), [
    (0.95, 0, r"df.*>= 1"), (0.95, 2.5, r"df"), (1.0, 2, r"confidence"), (0.0, 2, r"confidence"),
])
def test_student_quantile_checks_its_arguments(confidence: float, df: int, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        student_quantile(confidence, df)


def test_noise_from_worker_processes_moving_every_point_together(tiny: IterationSchedule) -> None:
    """Three processes each 5% off on every point: the points' errors look independent and
    small, the three processes' run totals do not."""
    sp = SeqPointSelector(n_points=4).fit(tiny).to_seqpoints(tiny)  # exact: no representation error
    speed = [0.95, 1.0, 1.05]

    def samples(p: SeqPoint) -> dict[str, list[float]]:
        v = linear(p.batch_size * (p.seq_len + p.tgt_len))
        return {"time_s": [v * f for f in speed for _ in range(4)], "time_s_processes": [v * f for f in speed]}

    res = project(tiny, sp, measure(sp, samples=samples))
    totals = np.array([res.totals["time_s"] * f for f in speed])
    expected = student_quantile(0.95, 2) * totals.std(ddof=1) / np.sqrt(3)  # 4.30 · 5% / √3 of the total
    assert res.noise["time_s"] == pytest.approx(expected)
    assert res.noise["time_s"] / res.totals["time_s"] == pytest.approx(4.3027 * 0.05 / np.sqrt(3), rel=1e-4)
    # Per point the same numbers give only z·√Σ(w·se)²: narrower by a factor of 3.4 here.
    ms = measure(sp, samples=lambda p: {"time_s": samples(p)["time_s"]})
    assert project(tiny, sp, ms).noise["time_s"] < expected / 3


def test_unaligned_worker_processes_fall_back_to_the_points(tiny: IterationSchedule) -> None:
    """Measurements merged from campaigns with different worker counts: the processes'
    totals cannot be formed, and the points' own errors are used."""
    sp = SeqPointSelector(n_points=4).fit(tiny).to_seqpoints(tiny)
    # Aligned, the three processes' totals would differ by 1 s of seq_len 10 (weight 3).
    per = {10: [1.0, 2.0, 3.0], 20: [0.6, 0.8], 30: [1.0, 1.0, 1.0], 100: [1.0, 1.0, 1.0]}
    res = project(tiny, sp, measure(sp, samples=lambda p: {"time_s": [0.6, 0.8] if p.seq_len == 20 else [1.0],
                                                            "time_s_processes": per[p.seq_len]}))
    se_10 = np.std([1.0, 2.0, 3.0], ddof=1) / np.sqrt(3)
    se_20 = np.std([0.6, 0.8], ddof=1) / np.sqrt(2)
    assert res.noise["time_s"] == pytest.approx(Z95 * np.hypot(3 * se_10, 2 * se_20))


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
# Three distinct signatures whose attention term is collinear with their tokens (found by
# hypothesis): the fit must use the features the points determine, not one per signature.
@example(rows=[(1, 1, 1), (2, 1, 2), (2, 2, 1), (1, 1, 0)], k=3, a=0.0, b=1.0)
def test_interpolated_exact_for_cost_linear_in_tokens(rows, k: int, a: float, b: float) -> None:  # type: ignore[no-untyped-def]
    arr = np.array(rows)
    sched = IterationSchedule.from_columns({"batch_size": arr[:, 0], "seq_len": arr[:, 1], "tgt_len": arr[:, 2]})
    k = min(k, len(sched))
    sel = make_selector("first", n_points=k).fit(sched)
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
    assert s.metric == "time_s" and s.steady_value is None  # no first steps: the steady state
    with pytest.raises(InputError, match="Measurement set a has no metric 'flops'"):
        project_speedup(tiny, sp, a, b, metric="flops")


def test_speedup_compares_whole_runs_when_both_sets_have_first_steps(tiny: IterationSchedule) -> None:
    # b is 2x faster in the steady state, but its first step of a shape costs 6x its steady
    # step against a's 2x (bf16 on a CPU): the whole run gains less than the steady state
    # (on this 8-iteration run, where most steps are first steps, b is even slower).
    sp = two_points(tiny)

    def with_first(fn, extra: float):  # type: ignore[no-untyped-def]
        ms = measure(sp, fn=fn)
        rows = [dataclasses.replace(m, metrics={**m.metrics, "time_s_first": extra * m.metrics["time_s"]})
                for m in ms.measurements]
        return dataclasses.replace(ms, measurements=rows)

    a = with_first(linear, 2.0)
    b = with_first(lambda t: linear(t) / 2, 6.0)
    s = project_speedup(tiny, sp, a, b)
    pa, pb = project(tiny, sp, a), project(tiny, sp, b)
    assert s.metric == "run_time_s"
    assert s.value == pytest.approx(pa.totals["run_time_s"] / pb.totals["run_time_s"])
    assert s.steady_value == pytest.approx(2.0)
    assert s.value < s.steady_value  # b's dear first steps eat part of its gain
    assert s.to_dict()["steady_speedup"] == pytest.approx(2.0)
    steady = project_speedup(tiny, sp, a, b, metric="time_s")
    assert steady.value == pytest.approx(2.0) and steady.steady_value is None
    # one set without first steps: both are compared on the steady state
    plain = project_speedup(tiny, sp, a, measure(sp, fn=lambda t: linear(t) / 2))
    assert plain.metric == "time_s" and plain.value == pytest.approx(2.0)


def by_workers(points: SeqPoints, speed: list[float], fn=linear) -> Measurements:  # type: ignore[no-untyped-def]
    """Measurements of ``fn`` by ``len(speed)`` worker processes, worker ``p`` ``speed[p]`` × the truth at every point."""
    def samples(p: SeqPoint) -> dict[str, list[float]]:
        v = fn(p.batch_size * (p.seq_len + p.tgt_len))
        return {"time_s": [v * f for f in speed for _ in range(3)], "time_s_processes": [v * f for f in speed]}

    return measure(points, fn=fn, samples=samples)


def test_speedup_pairs_the_workers_whose_speed_moved_together(tiny: IterationSchedule) -> None:
    """a's and b's workers took turns while the machine's speed moved ±5%: each worker's run
    total moves, their ratio does not. Paired, the ratio's noise is that of the ratios (0);
    as independent totals it is the two spreads in quadrature."""
    sp = SeqPointSelector(n_points=4).fit(tiny).to_seqpoints(tiny)  # exact: no representation error
    speed = [0.95, 1.0, 1.05]
    a, b = by_workers(sp, speed), by_workers(sp, speed, fn=lambda t: linear(t) / 2)
    pa = project(tiny, sp, a)
    assert pa.process_totals["time_s"] == pytest.approx(tuple(pa.totals["time_s"] * f for f in speed))
    paired = project_speedup(tiny, sp, a, b, noise="pairs")
    assert paired.pairs == 3 and paired.value == pytest.approx(2.0)
    assert paired.interval == pytest.approx((2.0, 2.0))
    alone = project_speedup(tiny, sp, a, b)  # the default: as independent
    rel = pa.noise["time_s"] / pa.totals["time_s"]
    assert alone.pairs == 0 and alone.noise == pytest.approx(2.0 * np.hypot(rel, rel))
    assert alone.noise / 2.0 == pytest.approx(np.sqrt(2) * 4.3027 * 0.05 / np.sqrt(3), rel=1e-4)
    assert alone.to_dict()["noise"] == pytest.approx(alone.noise) and "pairs" not in alone.to_dict()


def test_speedup_pairs_give_the_ratios_spread_times_t(tiny: IterationSchedule) -> None:
    """b's second worker ran 10% slow: the three ratios are 2, 2/1.1, 2."""
    sp = SeqPointSelector(n_points=4).fit(tiny).to_seqpoints(tiny)
    a = by_workers(sp, [1.0, 1.0, 1.0])
    b = by_workers(sp, [1.0, 1.1, 1.0], fn=lambda t: linear(t) / 2)
    s = project_speedup(tiny, sp, a, b, noise="pairs")
    r = np.array([2.0, 2.0 / 1.1, 2.0])
    expected = student_quantile(0.95, 2) * r.std(ddof=1) / np.sqrt(3) / r.mean()
    assert s.noise == pytest.approx(abs(s.value) * expected)
    assert s.to_dict()["pairs"] == 3


def test_speedup_pairs_need_the_same_worker_count(tiny: IterationSchedule) -> None:
    sp = SeqPointSelector(n_points=4).fit(tiny).to_seqpoints(tiny)
    a, b = by_workers(sp, [1.0, 1.02, 0.98]), by_workers(sp, [1.0, 1.05], fn=lambda t: linear(t) / 2)
    assert project_speedup(tiny, sp, a, b).pairs == 0  # the default: independent
    with pytest.raises(InputError, match=r"noise='pairs' needs .* 3 and 2.*noise='independent'"):
        project_speedup(tiny, sp, a, b, noise="pairs")
    with pytest.raises(ConfigError, match="noise"):
        project_speedup(tiny, sp, a, b, noise="paired")


def test_speedup_pairs_keep_the_cold_steps_noise(tiny: IterationSchedule) -> None:
    """Whole runs: the cold-step terms are the same constant in every worker's total, so
    their noise is added to the pairs' (0 here) instead of vanishing with it."""
    sp = SeqPointSelector(n_points=4).fit(tiny).to_seqpoints(tiny)

    def with_first(ms: Measurements) -> Measurements:  # first steps 2.0, 2.6, 1.4, 2.3 × the steady ones
        rows = [dataclasses.replace(m, metrics={**m.metrics, "time_s_first": m.metrics["time_s"] * f})
                for m, f in zip(ms.measurements, [2.0, 2.6, 1.4, 2.3], strict=True)]
        return dataclasses.replace(ms, measurements=rows)

    a = with_first(by_workers(sp, [0.95, 1.0, 1.05]))
    b = with_first(by_workers(sp, [0.95, 1.0, 1.05], fn=lambda t: linear(t) / 2))
    s = project_speedup(tiny, sp, a, b, noise="pairs")
    pa, pb = project(tiny, sp, a), project(tiny, sp, b)
    assert s.metric == "run_time_s" and s.pairs == 3 and pa.noise["first_occurrence_s"] > 0
    cold = np.hypot(pa.noise["first_occurrence_s"] / pa.totals["run_time_s"],
                    pb.noise["first_occurrence_s"] / pb.totals["run_time_s"])
    assert s.noise >= abs(s.value) * cold * (1 - 1e-9)
    assert s.noise < project_speedup(tiny, sp, a, b).noise


def test_one_context_serves_every_projection_of_a_schedule(
    tiny: IterationSchedule, monkeypatch: pytest.MonkeyPatch
) -> None:
    sp = two_points(tiny)
    ms = measure(sp)
    model = ScheduleModel.from_schedule(tiny)
    for method in ("weighted", "interpolated"):
        shared = project(tiny, sp, ms, method=method, context=model)
        assert shared.to_dict() == project(tiny, sp, ms, method=method).to_dict()
    assert project_cost(tiny, sp, tiny.seq_len * 1.0, method="interpolated", context=model) == project_cost(
        tiny, sp, tiny.seq_len * 1.0, method="interpolated"
    )
    assert np.array_equal(fitted_costs(tiny, sp, ms, context=model), fitted_costs(tiny, sp, ms))
    # an equal schedule read again is accepted; another one is not
    again = IterationSchedule.from_columns({c: getattr(tiny, c) for c in ("batch_size", "seq_len")})
    assert project(again, sp, ms, context=model).totals == project(tiny, sp, ms).totals
    other = IterationSchedule.from_columns({"batch_size": np.ones(8, dtype=np.int64), "seq_len": [10] * 8})
    with pytest.raises(InputError, match="built from another schedule"):
        project_cost(other, make_selector("first", n_points=1).fit(other), np.ones(8), method="interpolated", context=model)
    # project_speedup builds the model once for its four projections
    built = []
    original = ScheduleModel.from_schedule.__func__  # type: ignore[attr-defined]

    def counting(cls: type[ScheduleModel], schedule: IterationSchedule) -> ScheduleModel:
        built.append(schedule)
        return original(cls, schedule)  # type: ignore[no-any-return]

    monkeypatch.setattr(ScheduleModel, "from_schedule", classmethod(counting))
    project_speedup(tiny, sp, ms, measure(sp, fn=lambda t: linear(t) / 2))
    assert len(built) == 1


def test_error_helpers() -> None:
    assert relative_error(110.0, 100.0) == pytest.approx(0.1)
    assert relative_error([90.0, 100.0], [100.0, 100.0]).tolist() == pytest.approx([-0.1, 0.0])
    with pytest.raises(InputError, match="non-zero true values"):
        relative_error(1.0, 0.0)


# ---------------------------------------------------------------------------- honest intervals
def token_budget_run() -> IterationSchedule:
    """2,000 iterations of a token-budget run: batch size falls as the length grows."""
    rng = np.random.default_rng(5)
    sl = np.clip(np.round(rng.lognormal(3.8, 0.5, 2000)), 4, 400).astype(np.int64)
    return IterationSchedule.from_columns({"batch_size": np.maximum(1, 2048 // sl), "seq_len": sl})


def measure_cost(sched: IterationSchedule, sel: SeqPointSelector, cost: np.ndarray) -> tuple[SeqPoints, list[Measurement]]:
    sp = sel.to_seqpoints(sched)
    ms = [
        Measurement(iteration=p.iteration, batch_size=p.batch_size, seq_len=p.seq_len, metrics={"flops": float(cost[r])})
        for p, r in zip(sp.points, sel.points_.tolist(), strict=True)
    ]
    return sp, ms


@pytest.mark.parametrize("weights", ["calibrated", "counts"])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 8, 13])
def test_interval_contains_the_exact_total_of_a_quadratic_cost(weights: str, k: int) -> None:
    # Attention, per-token and sequential-step terms: a non-negative mix of the basis
    # components, so the count weights' error is within the selection's bound, and the
    # interpolation (no step feature) cannot see it: |T_w − T_i| alone missed k = 3..8.
    sched = token_budget_run()
    b, s = sched.batch_size.astype(float), sched.seq_len.astype(float)
    cost = b * s * s + 3.0 * b * s + 50.0 * s
    sel = SeqPointSelector(n_points=k, weights=weights).fit(sched)
    sp, ms = measure_cost(sched, sel, cost)
    res = project(sched, sp, ms)
    lo, hi = res.interval["flops"]
    assert lo <= cost.sum() <= hi
    bound = sel.estimated_error_
    assert res.representation["flops"] >= bound / (1 - bound) * abs(res.totals["flops"]) * (1 - 1e-12)
    if k >= 3:  # (at k = 2 a line through two points disagrees by 93%: the old term)
        # Honest, not absurd: within three times the bound's own width.
        assert res.relative_halfwidth("flops") <= 3 * bound / (1 - bound) + 1e-12


def test_representation_terms_against_a_reference() -> None:
    # A staircase cost (stride-4 rounding) on batch-16 lengths: the representation is the
    # largest of the projections' disagreement, the widened bound and z·ρ·sqrt(Σ(w·v)²),
    # ρ the relative residuals of a least-squares fit on (1, tokens, b·s²), n − 3 dof.
    rng = np.random.default_rng(11)
    sl = np.clip(np.round(rng.lognormal(4.0, 0.6, 1500)), 4, 600).astype(np.int64)
    sched = IterationSchedule.from_columns({"batch_size": np.full(1500, 16), "seq_len": sl})
    cost = 16.0 * ((sl - 1) // 4 + 1) * 4.0 + 0.01 * 16 * sl.astype(float) ** 2
    sel = SeqPointSelector(n_points=8, weights="counts").fit(sched)
    sp, ms = measure_cost(sched, sel, cost)
    res = project(sched, sp, ms)
    other = project(sched, sp, ms, method="interpolated")
    v = cost[sel.points_]
    w = sel.weights_
    tw = float(w @ v)
    x = np.stack([np.ones(8), 16.0 * sl[sel.points_], 16.0 * sl[sel.points_] ** 2.0], axis=1)
    fit = x @ np.linalg.lstsq(x, v, rcond=None)[0]
    rho = np.sqrt(np.sum(((v - fit) / np.maximum(np.abs(v), np.abs(fit))) ** 2) / (8 - 3))
    b = sel.estimated_error_
    terms = [abs(tw - other.totals["flops"]), b / (1 - b) * tw, Z95 * rho * np.sqrt(np.sum((w * v) ** 2))]
    assert res.totals["flops"] == pytest.approx(tw, rel=1e-12)
    assert res.representation["flops"] == pytest.approx(max(terms), rel=1e-9)
    assert all(t > 0 for t in terms)


def test_interval_uses_the_recorded_bound_and_validates_it(tiny: IterationSchedule) -> None:
    sp = SeqPointSelector(n_points=4).fit(tiny).to_seqpoints(tiny)  # every signature: bound 0
    ms = measure(sp)
    assert project(tiny, sp, ms).representation["time_s"] == pytest.approx(0.0, abs=1e-12)
    loose = SeqPoints(method=sp.method, n_iterations=sp.n_iterations, points=sp.points,
                      meta={**sp.meta, "estimated_error": 0.2})
    res = project(tiny, loose, ms)
    assert res.representation["time_s"] == pytest.approx(0.25 * res.totals["time_s"])
    # From b = 1/2 on the widening is capped at 2b·|T|.
    wide = SeqPoints(method=sp.method, n_iterations=sp.n_iterations, points=sp.points,
                     meta={**sp.meta, "estimated_error": 0.8})
    assert project(tiny, wide, ms).representation["time_s"] == pytest.approx(1.6 * res.totals["time_s"])
    for bad in ("1%", -0.1, float("nan"), True):
        broken = SeqPoints(method=sp.method, n_iterations=sp.n_iterations, points=sp.points,
                           meta={**sp.meta, "estimated_error": bad})
        with pytest.raises(InputError, match=re.escape(f"meta['estimated_error'] must be a finite number >= 0 (a fraction) or absent. Got {bad!r}")):
            project(tiny, broken, ms)
