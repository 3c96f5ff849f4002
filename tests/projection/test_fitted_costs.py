import numpy as np
import pytest

from seqpoint.exceptions import InputError
from seqpoint.projection import fitted_costs, project
from seqpoint.testing import toy_measurements, toy_points, toy_schedule


def _schedule():
    return toy_schedule([10, 20, 30, 40, 50, 60], batch_size=4)


def _meas(points, values, status="ok"):
    by_iteration = dict(zip((p.iteration for p in points.points), values, strict=True))
    return toy_measurements(points, lambda p: by_iteration[p.iteration], status=status)


def test_fit_passes_through_points_and_sums_to_interpolated_total():
    s = _schedule()
    pts = toy_points(s, [0, 3, 5])
    vals = [1.0, 2.5, 4.0]
    fit = fitted_costs(s, pts, _meas(pts, vals))
    assert fit.shape == (6,)
    np.testing.assert_allclose(fit[[0, 3, 5]], vals)
    total = project(s, pts, _meas(pts, vals), method="interpolated").totals["time_s"]
    assert fit.sum() == pytest.approx(total)


def test_fit_exact_for_cost_linear_in_tokens():
    s = _schedule()
    cost = 0.5 + 0.01 * s.padded_tokens
    pts = toy_points(s, [1, 4])
    fit = fitted_costs(s, pts, _meas(pts, cost[[1, 4]]))
    np.testing.assert_allclose(fit, cost, rtol=1e-9)


def test_fit_needs_an_ok_point():
    s = _schedule()
    pts = toy_points(s, [1, 4])
    with pytest.raises(InputError, match="No SeqPoint has an ok measurement of 'time_s'"):
        fitted_costs(s, pts, _meas(pts, [0.0, 0.0], status="oom"))
