import numpy as np
import pytest

from seqpoint.exceptions import AdjustedInputWarning
from seqpoint.measurements import Measurement, Measurements
from seqpoint.projection import (
    PointProjector,
    ScheduleModel,
    leave_one_out_error,
    project,
    roughness,
)
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoint, SeqPoints

SL = [10, 20, 30, 40, 50, 60]


def _setup(rows, *, first=True):
    # every signature occurs twice: 12 iterations, 6 unique signatures
    s = IterationSchedule.from_columns({"batch_size": [4] * 12, "seq_len": SL + SL})
    n = len(s)
    w = n / len(rows)
    pts = SeqPoints(method="t", n_iterations=n, points=tuple(
        SeqPoint(iteration=r, batch_size=4, seq_len=SL[r], weight=w) for r in rows))
    ms = []
    for p in pts.points:
        steady = 0.001 * p.seq_len
        metrics = {"time_s": steady}
        if first:
            metrics["time_s_first"] = steady + 0.0005 * p.seq_len  # 50% extra on the first step
        ms.append(Measurement(iteration=p.iteration, batch_size=4, seq_len=p.seq_len, metrics=metrics,
                              samples={"time_s": [steady] * 3}))
    return s, pts, Measurements(workload="w", measurements=tuple(ms))


def test_first_occurrence_paid_once_per_unique_signature():
    s, pts, ms = _setup(range(6))
    res = project(s, pts, ms)
    steady_total = 2 * 0.001 * sum(SL)
    assert res.totals["time_s"] == pytest.approx(steady_total)
    assert res.totals["first_occurrence_s"] == pytest.approx(0.0005 * sum(SL))
    assert res.totals["run_time_s"] == pytest.approx(steady_total + 0.0005 * sum(SL))
    lo, hi = res.interval["run_time_s"]
    assert lo <= res.totals["run_time_s"] <= hi
    assert "time_s_first" not in res.totals  # never projected per iteration


def test_first_occurrence_is_median_relative_extra_times_every_shape():
    s, pts, ms = _setup([0, 2, 5])
    res = project(s, pts, ms)
    # a 50% relative extra at every point: 50% of the steady time of every unique shape
    assert res.totals["first_occurrence_s"] == pytest.approx(0.0005 * sum(SL), rel=1e-9)
    lo, hi = res.interval["first_occurrence_s"]
    assert lo == pytest.approx(hi)  # identical relative extras: no spread, no noise term


def test_one_disturbed_cold_step_does_not_spread_over_every_shape():
    s, pts, ms = _setup(range(6))
    # relative extras of 40-60% around a 50% median, and one cold step a neighbour
    # process stalled to 10x its steady time
    rel = [10.0, 0.4, 0.45, 0.5, 0.55, 0.6]
    disturbed = tuple(
        Measurement(iteration=m.iteration, batch_size=4, seq_len=m.seq_len,
                    metrics={"time_s": m.metrics["time_s"],
                             "time_s_first": (1 + r) * m.metrics["time_s"]},
                    samples=m.samples)
        for m, r in zip(ms.measurements, rel, strict=True))
    res = project(s, pts, Measurements(workload="w", measurements=disturbed))
    expected = 0.0005 * sum(SL) * (0.525 / 0.5)  # the median of the six extras is 52.5%
    assert res.totals["first_occurrence_s"] == pytest.approx(expected, rel=1e-9)
    lo, hi = res.interval["first_occurrence_s"]
    assert lo < expected < hi and (hi - lo) / 2 < 0.5 * expected  # spread widens, outlier does not


def test_no_first_occurrence_without_cold_steps():
    s, pts, ms = _setup(range(6), first=False)
    res = project(s, pts, ms)
    assert "first_occurrence_s" not in res.totals and "run_time_s" not in res.totals
    res = project(*_setup(range(6))[:3], metrics=["time_s"])
    assert set(res.totals) == {"time_s"}


def test_negative_extra_clipped():
    s, pts, ms = _setup(range(6))
    ms = Measurements(workload="w", measurements=tuple(
        Measurement(iteration=m.iteration, batch_size=4, seq_len=m.seq_len,
                    metrics={"time_s": m.metrics["time_s"], "time_s_first": 0.5 * m.metrics["time_s"]})
        for m in ms.measurements))
    # the machine slowed while the points were timed: said, and the term taken as 0
    with pytest.warns(AdjustedInputWarning, match=r"cold steps measured 50\.0% cheaper"):
        res = project(s, pts, ms)
    assert res.totals["first_occurrence_s"] == pytest.approx(0.0)
    assert np.isfinite(res.interval["run_time_s"][0])


def test_run_time_can_be_requested_by_name():
    s, pts, ms = _setup(range(6))
    res = project(s, pts, ms, metrics=["run_time_s"])
    assert res.totals["run_time_s"] == pytest.approx(2 * 0.001 * sum(SL) + 0.0005 * sum(SL))
    assert "run_time_s" in res.noise


def test_packed_rows_pay_first_occurrence_once_per_tensor_shape():
    # two packed signatures share the tensor shape (4, 64): one cold step, not two
    s = IterationSchedule.from_columns(
        {"batch_size": [4, 4, 4], "seq_len": [64, 64, 32], "sum_sq_len": [4000, 9000, 2000]},
        meta={"packed": True},
    )
    pts = SeqPoints(method="t", n_iterations=3, points=tuple(
        SeqPoint(iteration=i, batch_size=4, seq_len=int(s.seq_len[i]), sum_sq_len=int(s.sum_sq_len[i]),
                 weight=1.0) for i in range(3)))
    ms = Measurements(workload="w", measurements=tuple(
        Measurement(iteration=p.iteration, batch_size=4, seq_len=p.seq_len, sum_sq_len=p.sum_sq_len,
                    metrics={"time_s": 0.01, "time_s_first": 0.02}) for p in pts.points))
    res = project(s, pts, ms)
    assert res.totals["first_occurrence_s"] == pytest.approx(2 * 0.01)  # shapes (4,64) and (4,32)


def test_cold_steps_follow_the_lru_stack_distance_rule():
    from seqpoint.projection import cold_steps

    seq = [0, 1, 2, 0, 1, 2, 2, 0]
    assert cold_steps(seq).tolist() == [True, True, True, False, False, False, False, False]
    # 10 entries per shape, 20 in the cache: two shapes fit, three thrash
    assert cold_steps(seq, per_shape=10, capacity=20).tolist() == [True] * 6 + [False, True]
    # shared entries take room from every shape: 5 + 10 (d + 1) > 25 evicts at d = 2
    assert cold_steps(seq, per_shape=10, shared=5, capacity=25).tolist() == [True] * 6 + [False, True]
    assert cold_steps(seq, per_shape=10, shared=5, capacity=35).tolist() == cold_steps(seq).tolist()
    assert cold_steps([]).tolist() == []


def test_cold_steps_match_a_primitive_level_lru():
    # brute force: an LRU over individual cache entries, each step touching its shape's
    # entries after the shared ones, against the shape-level rule
    from collections import OrderedDict

    from seqpoint.projection import cold_steps

    rng = np.random.default_rng(3)
    for _ in range(20):
        seq = rng.integers(0, 12, size=60).tolist()
        per_shape, shared, capacity = int(rng.integers(1, 6)), int(rng.integers(0, 4)), int(rng.integers(8, 40))
        lru: OrderedDict = OrderedDict()
        expected = []
        for s in seq:
            keys = [("shared", j) for j in range(shared)] + [(s, j) for j in range(per_shape)]
            expected.append(any(k not in lru for k in keys[shared:]))
            for k in keys:
                lru[k] = None
                lru.move_to_end(k)
                if len(lru) > capacity:
                    lru.popitem(last=False)
        got = cold_steps(seq, per_shape=per_shape, shared=shared, capacity=capacity).tolist()
        assert got == expected, (seq, per_shape, shared, capacity)


def test_measured_primitive_counts_charge_evicted_steps():
    # 6 shapes used in a cycle twice: with room for all, 6 cold steps; with room for 2, 12
    s, pts, ms = _setup(range(6))
    base = project(s, pts, ms).totals["first_occurrence_s"]

    def with_counts(capacity):
        return Measurements(workload="w", measurements=tuple(
            Measurement(iteration=m.iteration, batch_size=4, seq_len=m.seq_len,
                        metrics={**m.metrics, "onednn_primitives_new": 10.0,
                                 "onednn_primitives_shared": 0.0, "onednn_cache_capacity": capacity},
                        samples=m.samples) for m in ms.measurements))

    assert project(s, pts, with_counts(1024.0)).totals["first_occurrence_s"] == pytest.approx(base)
    thrash = project(s, pts, with_counts(20.0))
    assert thrash.totals["first_occurrence_s"] == pytest.approx(2 * base)
    assert thrash.cold_steps == {"first": 6, "evicted": 6}
    assert thrash.to_dict()["cold_steps"] == {"first": 6, "evicted": 6}
    assert project(s, pts, with_counts(1024.0)).cold_steps == {"first": 6, "evicted": 0}
    assert "onednn_cache_capacity" not in thrash.totals  # bookkeeping, not a projected metric


def test_roughness_is_the_smaller_of_global_fit_and_leave_one_out_error():
    sl = np.arange(10, 410, 10)
    s = IterationSchedule.from_columns({"batch_size": [4] * sl.size, "seq_len": sl})
    model = ScheduleModel.from_schedule(s)
    rows = np.array([0, 5, 10, 15, 20, 25, 30, 35, 39])
    sig = model.table.inverse[rows]
    proj = PointProjector(model, sig, np.full(rows.size, sl.size / rows.size), np.ones(rows.size, bool))
    length = sl[rows].astype(float)
    x = model.features[sig, :3]
    scale = lambda v: float(np.sqrt(np.sum((proj.weights * v) ** 2)))  # noqa: E731
    for values in (np.exp(length / 200), length + 20 * np.maximum(0.0, length - 200)):
        coef, *_ = np.linalg.lstsq(x, values, rcond=None)
        fit = x @ coef
        # RMS relative residual of the global fit, over n - 3 degrees of freedom
        global_rho = float(np.sqrt(np.sum(((values - fit) / np.maximum(np.abs(values), np.abs(fit))) ** 2)
                                   / (rows.size - 3)))
        loo = leave_one_out_error(proj, values)
        assert loo is not None
        assert roughness(proj, values) / scale(values) == pytest.approx(min(global_rho, loo))
    # a smooth curve: leaving any interior point out misses it by under 5%
    assert leave_one_out_error(proj, np.exp(length / 200)) < 0.05
