"""calibrate_weights: exact solutions on hand-built points, the raking form, every validation rule."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqpoint.exceptions import InputError
from seqpoint.selection import calibrate_weights


def test_unique_solution_is_found_exactly() -> None:
    # Points at seq_len 10, 20, 100 standing for 3, 3 and 2 iterations of a run whose
    # totals are Σ1 = 8, Σs = 300, Σs² = 22000: the one solution is (80, 135, 73) / 36.
    s = np.array([10.0, 20.0, 100.0])
    w = calibrate_weights(np.stack([s, s * s], axis=1), [3.0, 3.0, 2.0], [300.0, 22000.0])
    assert w == pytest.approx(np.array([80.0, 135.0, 73.0]) / 36.0, rel=1e-9)
    # A per-iteration column repeats the Σ w = n constraint: same answer.
    w1 = calibrate_weights(np.stack([np.ones(3), s, s * s], axis=1), [3, 3, 2], [8.0, 300.0, 22000.0])
    assert w1 == pytest.approx(w, rel=1e-9)


def test_design_that_already_matches_is_returned() -> None:
    x = np.array([[1.0, 4.0], [2.0, 1.0], [5.0, 5.0]])
    d = np.array([2.0, 3.0, 1.0])
    assert np.array_equal(calibrate_weights(x, d, d @ x), d)


def test_more_points_than_components_stays_closest_in_kl() -> None:
    x = np.array([[1.0], [2.0], [3.0], [4.0], [6.0]])
    d = np.array([4.0, 1.0, 2.0, 2.0, 1.0])
    w = calibrate_weights(x, d, [30.0])
    assert w.sum() == pytest.approx(10.0) and float(w @ x[:, 0]) == pytest.approx(30.0, rel=1e-7)
    # Raking form: log(w/d) is affine in the component (the KL-closest solution).
    a = np.stack([np.ones(5), x[:, 0]], axis=1)
    coef, *_ = np.linalg.lstsq(a, np.log(w / d), rcond=None)
    assert a @ coef == pytest.approx(np.log(w / d), abs=1e-7)
    assert coef[1] > 0  # the total asked for more of the component: larger points gain


def test_unreachable_component_is_matched_as_closely_as_possible() -> None:
    # Every point has batch size 8, but the run's mean batch is 7.5: Σ sequences cannot be
    # reproduced with Σ w = 10. Tokens still can, exactly.
    b = np.full(4, 8.0)
    tok = 8.0 * np.array([10.0, 20.0, 30.0, 40.0])
    d = np.array([3.0, 3.0, 2.0, 2.0])
    w = calibrate_weights(np.stack([b, tok], axis=1), d, [75.0, 2000.0])
    assert w.sum() == pytest.approx(10.0, rel=1e-12) and np.all(w > 0)
    assert float(w @ tok) == pytest.approx(2000.0, rel=1e-6)
    assert float(w @ b) == pytest.approx(80.0)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 12),
    st.integers(1, 4),
    st.integers(0, 2**31 - 1),
)
def test_reachable_totals_are_reproduced(k: int, j: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 100.0, (k, j))
    d = rng.uniform(0.5, 20.0, k)
    # Totals of a positive re-weighting with the same sum: reachable by construction.
    truth = d * rng.uniform(0.5, 2.0, k)
    truth *= d.sum() / truth.sum()
    totals = truth @ x
    w = calibrate_weights(x, d, totals)
    assert w.sum() == pytest.approx(d.sum(), rel=1e-12)
    assert np.all(w >= 0)
    assert w @ x == pytest.approx(totals, rel=1e-6)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (([1.0, 2.0], [1.0, 1.0], [3.0]), {}, "needs components of shape (k, J), design of shape (k,) and totals of shape (J,). Got (2,), (2,) and (1,)."),
        (([[1.0], [2.0]], [1.0], [3.0]), {}, "Got (2, 1), (1,) and (1,)."),
        (([[1.0], [2.0]], [1.0, 0.0], [3.0]), {}, "needs at least one design weight, all finite and > 0."),
        (([[1.0], [2.0]], [1.0, 1.0], [0.0]), {}, "needs every total finite and > 0; drop zero components."),
        (([[1.0], [-2.0]], [1.0, 1.0], [3.0]), {}, "needs every component value finite and >= 0."),
        (([[1.0], [np.nan]], [1.0, 1.0], [3.0]), {}, "needs every component value finite and >= 0."),
        (([[1.0], [2.0]], [1.0, 1.0], [3.0]), {"ridge": 0.0}, "The 'ridge' parameter of calibrate_weights must be a float > 0. Got 0.0."),
    ],
)
def test_validation(args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        calibrate_weights(*args, **kwargs)
