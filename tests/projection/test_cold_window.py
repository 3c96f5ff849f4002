"""The cold-step term calibrated from a timed in-sequence window, and how it is reported."""

from __future__ import annotations

import pytest

from seqpoint.exceptions import InputError
from seqpoint.measurements import Measurement, Measurements, StepWindow
from seqpoint.projection import project, project_speedup
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoint, SeqPoints

SL = [10, 20, 30, 40, 50, 60]
IN_RUN, EXTRA = 1.1, 1.0  # EXTRA: a cold step's extra, as the points' first steps measure it


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
    # Iterations 0..7: six new shapes (cold: 100% over the in-run steady time), then two
    # warm steps: each step 10% over what the points charge for it.
    sls = (SL + SL)[start:start + 8]
    seen: set[int] = set()
    times = []
    for sl in sls:
        times.append(scale * 0.001 * sl * IN_RUN * ((1 + extra) if sl not in seen else 1))
        seen.add(sl)
    return StepWindow(start=start, signatures=tuple((4, sl, 0) for sl in sls), times_s=tuple(times))


def test_window_calibrates_the_cold_term_exactly() -> None:
    res = project(*_setup(_window()), cold="window")
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


def test_first_step_calibration_is_the_default_and_named() -> None:
    s, pts, ms = _setup(_window())
    res = project(s, pts, ms)
    assert res.totals["first_occurrence_s"] == pytest.approx(0.001 * sum(SL))  # 100% extra
    assert res.cold_term["method"] == "first_step" and "in_run_ratio" not in res.cold_term
    assert project(s, pts, ms, cold="first_step").totals == res.totals
    # points without a cold first step: the window calibrates the term
    bare = Measurements(workload="w", window=ms.window, measurements=tuple(
        Measurement(iteration=m.iteration, batch_size=4, seq_len=m.seq_len, metrics={"time_s": m.metrics["time_s"]},
                    samples=m.samples) for m in ms.measurements))
    assert project(s, pts, bare).cold_term["method"] == "window"
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
    res = project(*_setup(only_cold), cold="window", in_run_correction=True)
    assert "in_run_ratio" not in res.cold_term  # not measured, rather than a made-up 1.0
    # Against the isolated steady time the cold steps cost IN_RUN * (1 + EXTRA) - 1 more,
    # which the projection charges them: nothing left for the in-run ratio to scale.
    assert res.cold_term["relative_extra"] == pytest.approx(IN_RUN * (1 + EXTRA) - 1)
    assert res.in_run_ratio == pytest.approx(1.0)
    assert res.totals["run_time_s"] == pytest.approx(res.totals["time_s"] + res.totals["first_occurrence_s"])


def test_the_in_run_gap_widens_the_whole_run_interval() -> None:
    """Every step of the window ran 10% over what the projection charges for it: the whole
    run's interval is widened by 10% of the run time on each side, unless the ratio was
    applied to the total; the steady state's is left alone. Calibrated from the window, the
    cold steps are charged their in-run extra and the ratio is what is left over."""
    s, pts, ms = _setup(_window())
    steady = 2 * 0.001 * sum(SL)
    # the window calibration charges a cold step (1 + EXTRA · IN_RUN) x its steady time
    by_window = (IN_RUN * (1 + EXTRA) * sum(SL) + IN_RUN * sum(SL[:2])) / ((1 + EXTRA * IN_RUN) * sum(SL) + sum(SL[:2]))
    for cold, r in (("first_step", IN_RUN), ("window", by_window)):
        res = project(s, pts, ms, cold=cold)
        assert res.in_run_ratio == pytest.approx(r)
        assert res.in_run_gap == pytest.approx((r - 1) * res.totals["run_time_s"])
        lo, hi = res.interval["run_time_s"]
        half = res.representation["run_time_s"] + res.noise["run_time_s"] + res.in_run_gap
        assert (hi - lo) / 2 == pytest.approx(half)
        assert res.to_dict()["in_run_gap"] == pytest.approx(res.in_run_gap)
        slo, shi = res.interval["time_s"]
        assert (shi - slo) / 2 == pytest.approx(res.representation["time_s"] + res.noise["time_s"])
    corrected = project(s, pts, ms, in_run_correction=True)
    assert corrected.in_run_gap == 0.0 and "in_run_gap" not in corrected.to_dict()
    assert corrected.totals["run_time_s"] == pytest.approx(steady * IN_RUN + corrected.totals["first_occurrence_s"])
    assert project(*_setup(None)).in_run_gap == 0.0  # no window, nothing known


def test_the_speedup_counts_what_the_windows_saw() -> None:
    """A's window ran 10% over its projection, B has no window: the speedup's interval widens
    by how far A's run time scaled by its ratio moves the ratio."""
    s, pts, ms = _setup(_window())
    _, _, plain = _setup(None)
    a, b = project(s, pts, ms), project(s, pts, plain)
    assert a.in_run_ratio == pytest.approx(IN_RUN) and b.in_run_ratio is None
    assert a.to_dict()["in_run_ratio"] == pytest.approx(IN_RUN) and "in_run_ratio" not in b.to_dict()
    sp = project_speedup(s, pts, ms, plain)
    assert sp.metric == "run_time_s"
    assert sp.in_run_gap == pytest.approx(abs(IN_RUN - 1) * sp.value) and sp.in_run_gap > 0
    assert sp.interval[1] - sp.value == pytest.approx(sp.representation + sp.noise + sp.in_run_gap)
    assert sp.to_dict()["in_run_gap"] == pytest.approx(sp.in_run_gap)
    assert project_speedup(s, pts, ms, plain, metric="time_s").in_run_gap == 0.0  # the steady state alone


def test_a_shared_slowdown_cancels_in_the_speedup() -> None:
    """Both windows ran 10% over their projections, though B's steps cost twice A's: the
    slowdown cancels in the ratio. B's 21% over A's 10% moves it by 1.1 / 1.21."""
    s, pts, ms_a = _setup(_window())
    _, _, ms_b = _setup(_window(scale=2.0), scale=2.0)
    assert project(s, pts, ms_b).in_run_ratio == pytest.approx(IN_RUN)
    same = project_speedup(s, pts, ms_a, ms_b)
    assert same.in_run_gap == pytest.approx(0.0) and "in_run_gap" not in same.to_dict()
    _, _, ms_c = _setup(_window(scale=2.0 * IN_RUN), scale=2.0)
    sp = project_speedup(s, pts, ms_a, ms_c)
    assert sp.in_run_gap == pytest.approx(abs(sp.value * IN_RUN / IN_RUN**2 - sp.value))
