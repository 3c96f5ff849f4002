"""The cold-step term calibrated from a timed in-sequence window, and how it is reported."""

from __future__ import annotations

import pytest

from seqpoint.exceptions import InputError
from seqpoint.measurements import Measurement, Measurements, StepWindow
from seqpoint.projection import project, project_speedup
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoint, SeqPoints

SL = [10, 20, 30, 40, 50, 60]
IN_RUN, EXTRA = 1.1, 0.3


def _setup(window: StepWindow | None, scale: float = 1.0) -> tuple[IterationSchedule, SeqPoints, Measurements]:
    s = IterationSchedule.from_columns({"batch_size": [4] * 12, "seq_len": SL + SL})
    pts = SeqPoints(method="t", n_iterations=12, points=tuple(
        SeqPoint(iteration=r, batch_size=4, seq_len=SL[r], weight=2.0) for r in range(6)))
    ms = tuple(
        Measurement(iteration=p.iteration, batch_size=4, seq_len=p.seq_len,
                    metrics={"time_s": scale * 0.001 * p.seq_len, "time_s_first": scale * 0.002 * p.seq_len},
                    samples={"time_s": [scale * 0.001 * p.seq_len] * 3})
        for p in pts.points)
    return s, pts, Measurements(workload="w", measurements=ms, window=window)


def _window(start: int = 0, scale: float = 1.0, extra: float = EXTRA) -> StepWindow:
    # Iterations 0..7: six new shapes (cold: 30% over the in-run steady time), then two
    # warm steps 10% slower in the run than the isolated points.
    sls = (SL + SL)[start:start + 8]
    seen: set[int] = set()
    times = []
    for sl in sls:
        times.append(scale * 0.001 * sl * IN_RUN * ((1 + extra) if sl not in seen else 1))
        seen.add(sl)
    return StepWindow(start=start, signatures=tuple((4, sl, 0) for sl in sls), times_s=tuple(times))


def test_window_calibrates_the_cold_term_exactly() -> None:
    res = project(*_setup(_window()))
    cold = EXTRA * IN_RUN * 0.001 * sum(SL)  # every shape is cold once, at the in-run steady time
    assert res.totals["first_occurrence_s"] == pytest.approx(cold)
    assert res.totals["run_time_s"] == pytest.approx(res.totals["time_s"] + cold)
    term = res.cold_term
    assert term["method"] == "window" and term["samples"] == 6
    assert term["relative_extra"] == pytest.approx(EXTRA)
    assert term["in_run_ratio"] == pytest.approx(IN_RUN)
    assert term["share"] == pytest.approx(cold / res.totals["run_time_s"])
    assert res.to_dict()["cold_term"] == term


def test_in_run_correction_scales_the_steady_state() -> None:
    res = project(*_setup(_window()), in_run_correction=True)
    steady = 2 * 0.001 * sum(SL)
    assert res.totals["time_s"] == pytest.approx(steady)  # the measured metric is untouched
    assert res.totals["run_time_s"] == pytest.approx(steady * IN_RUN + res.totals["first_occurrence_s"])


def test_first_step_calibration_is_still_there_and_named() -> None:
    s, pts, ms = _setup(_window())
    res = project(s, pts, ms, cold="first_step")
    assert res.totals["first_occurrence_s"] == pytest.approx(0.001 * sum(SL))  # 100% extra
    assert res.cold_term["method"] == "first_step" and "in_run_ratio" not in res.cold_term
    no_window = project(*_setup(None))
    assert no_window.cold_term["method"] == "first_step"
    assert "first_occurrence_s" not in project(*_setup(None), cold="window").totals


def test_a_window_from_another_schedule_is_one_error() -> None:
    s, pts, ms = _setup(_window(start=5))
    bad = Measurements(workload="w", measurements=ms.measurements,
                       window=StepWindow(start=0, signatures=ms.window.signatures, times_s=ms.window.times_s))
    with pytest.raises(InputError, match="step window has signature"):
        project(s, pts, bad)
    late = StepWindow(start=10, signatures=ms.window.signatures, times_s=ms.window.times_s)
    with pytest.raises(InputError, match="runs past"):
        project(s, pts, Measurements(workload="w", measurements=ms.measurements, window=late))
    with pytest.raises(ValueError, match="'cold' parameter"):
        project(s, pts, ms, cold="nope")


def test_a_window_of_new_shapes_only_measures_no_in_run_ratio() -> None:
    # The first 6 iterations: every step a new shape, no warm step to compare with.
    only_cold = _window()
    only_cold = StepWindow(start=0, signatures=only_cold.signatures[:6], times_s=only_cold.times_s[:6])
    res = project(*_setup(only_cold), in_run_correction=True)
    assert "in_run_ratio" not in res.cold_term  # not measured, rather than a made-up 1.0
    # Against the isolated steady time the cold steps cost IN_RUN * (1 + EXTRA) - 1 more,
    # and the steady state is left as measured.
    assert res.cold_term["relative_extra"] == pytest.approx(IN_RUN * (1 + EXTRA) - 1)
    assert res.totals["run_time_s"] == pytest.approx(res.totals["time_s"] + res.totals["first_occurrence_s"])


def test_the_in_run_gap_widens_the_whole_run_interval() -> None:
    """The window's warm steps ran 10% over the isolated points: the whole run's interval
    is widened by 10% of the steady state on each side (for either calibration of the cold
    term), unless the ratio was applied to the total; the steady state's is left alone."""
    s, pts, ms = _setup(_window())
    steady = 2 * 0.001 * sum(SL)
    for cold in ("window", "first_step"):
        res = project(s, pts, ms, cold=cold)
        assert res.in_run_gap == pytest.approx((IN_RUN - 1) * steady)
        lo, hi = res.interval["run_time_s"]
        half = res.representation["run_time_s"] + res.noise["run_time_s"] + res.in_run_gap
        assert (hi - lo) / 2 == pytest.approx(half)
        assert res.to_dict()["in_run_gap"] == pytest.approx(res.in_run_gap)
        slo, shi = res.interval["time_s"]
        assert (shi - slo) / 2 == pytest.approx(res.representation["time_s"] + res.noise["time_s"])
    corrected = project(s, pts, ms, in_run_correction=True)
    assert corrected.in_run_gap == 0.0 and "in_run_gap" not in corrected.to_dict()
    # first_step calibration, corrected: the window's ratio scales the steady state too
    first = project(s, pts, ms, cold="first_step", in_run_correction=True)
    assert first.totals["run_time_s"] == pytest.approx(steady * IN_RUN + first.totals["first_occurrence_s"])
    assert project(*_setup(None)).in_run_gap == 0.0  # no window, nothing known


def test_the_speedup_counts_what_the_windows_saw() -> None:
    """A's window ran its warm steps 10% over the isolated points, B has no window: the
    speedup's interval widens by how far A's scaled steady state moves the ratio. The same
    slowdown in both configurations cancels in the ratio."""
    s, pts, ms = _setup(_window())
    _, _, plain = _setup(None)
    a, b = project(s, pts, ms), project(s, pts, plain)
    assert a.in_run_ratio == pytest.approx(IN_RUN) and b.in_run_ratio is None
    assert a.to_dict()["in_run_ratio"] == pytest.approx(IN_RUN) and "in_run_ratio" not in b.to_dict()
    sp = project_speedup(s, pts, ms, plain)
    assert sp.metric == "run_time_s"
    moved = (a.totals["time_s"] * IN_RUN + a.totals["first_occurrence_s"]) / b.totals["run_time_s"]
    assert sp.in_run_gap == pytest.approx(abs(moved - sp.value)) and sp.in_run_gap > 0
    assert sp.interval[1] - sp.value == pytest.approx(sp.representation + sp.noise + sp.in_run_gap)
    assert sp.to_dict()["in_run_gap"] == pytest.approx(sp.in_run_gap)
    same = project_speedup(s, pts, ms, ms)
    assert same.in_run_gap == pytest.approx(0.0) and "in_run_gap" not in same.to_dict()
    assert project_speedup(s, pts, ms, plain, metric="time_s").in_run_gap == 0.0  # the steady state alone


def test_a_shared_slowdown_leaves_only_the_cold_shares_difference() -> None:
    """Both windows ran their warm steps 10% over the isolated points, but B's steps cost
    twice A's and its cold steps 3 times more, relatively: the slowdown cancels in the
    steady states, not in the cold-step shares."""
    s, pts, ms_a = _setup(_window())
    _, _, ms_b = _setup(_window(scale=2.0, extra=3 * EXTRA), scale=2.0)
    a, b = project(s, pts, ms_a), project(s, pts, ms_b)
    assert a.in_run_ratio == pytest.approx(IN_RUN) and b.in_run_ratio == pytest.approx(IN_RUN)
    steady_a, cold_a = a.totals["time_s"], a.totals["first_occurrence_s"]
    steady_b, cold_b = b.totals["time_s"], b.totals["first_occurrence_s"]
    assert cold_b / steady_b == pytest.approx(3 * cold_a / steady_a)  # the cold shares differ
    sp = project_speedup(s, pts, ms_a, ms_b)
    moved = (steady_a * IN_RUN + cold_a) / (steady_b * IN_RUN + cold_b)
    assert sp.value == pytest.approx((steady_a + cold_a) / (steady_b + cold_b))
    assert sp.in_run_gap == pytest.approx(abs(moved - sp.value)) and sp.in_run_gap > 0
