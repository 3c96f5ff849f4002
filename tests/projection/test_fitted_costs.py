import numpy as np
import pytest

from seqpoint.exceptions import InputError
from seqpoint.measurements import Measurement, Measurements
from seqpoint.projection import fitted_costs, project
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoint, SeqPoints


def _schedule():
    return IterationSchedule.from_columns(
        {"batch_size": [4] * 6, "seq_len": [10, 20, 30, 40, 50, 60]}
    )


def _points(rows, sched):
    n = len(sched)
    w = n / len(rows)
    return SeqPoints(method="t", n_iterations=n, points=tuple(
        SeqPoint(iteration=int(r), batch_size=int(sched.batch_size[r]), seq_len=int(sched.seq_len[r]),
                 weight=w) for r in rows))


def _meas(points, values, status="ok"):
    return Measurements(workload="w", measurements=tuple(
        Measurement(iteration=p.iteration, batch_size=p.batch_size, seq_len=p.seq_len,
                    metrics={"time_s": v}, status=status) for p, v in zip(points.points, values, strict=True)))


def test_fit_passes_through_points_and_sums_to_interpolated_total():
    s = _schedule()
    pts = _points([0, 3, 5], s)
    vals = [1.0, 2.5, 4.0]
    fit = fitted_costs(s, pts, _meas(pts, vals))
    assert fit.shape == (6,)
    np.testing.assert_allclose(fit[[0, 3, 5]], vals)
    total = project(s, pts, _meas(pts, vals), method="interpolated").totals["time_s"]
    assert fit.sum() == pytest.approx(total)


def test_fit_exact_for_cost_linear_in_tokens():
    s = _schedule()
    cost = 0.5 + 0.01 * s.padded_tokens
    pts = _points([1, 4], s)
    fit = fitted_costs(s, pts, _meas(pts, cost[[1, 4]]))
    np.testing.assert_allclose(fit, cost, rtol=1e-9)


def test_fit_needs_an_ok_point():
    s = _schedule()
    pts = _points([1, 4], s)
    with pytest.raises(InputError, match="No SeqPoint has an ok measurement of 'time_s'"):
        fitted_costs(s, pts, _meas(pts, [0.0, 0.0], status="oom"))
