import numpy as np
import pytest

from seqpoint.schedule import IterationSchedule
from seqpoint.selection import weighted_projection
from seqpoint.validation import FullRun, error_vs_k, reduction_factor


def _schedule():
    return IterationSchedule.from_columns(
        {"batch_size": [2] * 8, "seq_len": [10, 20, 30, 40, 10, 20, 30, 40]}
    )


def test_full_run_statistics():
    fr = FullRun(iteration_s=np.array([[1.0, 2.0], [1.5, 2.5]]), wall_s=np.array([3.1, 4.1]))
    assert fr.totals_s.tolist() == [3.0, 4.0]
    assert fr.total_s == 3.5
    assert fr.noise_floor == pytest.approx(1.0 / 3.5)
    assert fr.per_iteration_s.tolist() == [1.25, 2.25]
    one = FullRun(iteration_s=np.array([[1.0]]), wall_s=np.array([1.0]))
    assert np.isnan(one.noise_floor)


def test_weighted_projection_and_reduction():
    cost = np.array([1.0, 2.0, 3.0])
    assert weighted_projection(cost, [0, 2], [1.5, 1.5]) == 6.0
    assert reduction_factor(1000, 10, warmup=2, repeats=3) == 20.0


def test_error_vs_k_exact_at_full_coverage():
    s = _schedule()
    cost = (s.seq_len.astype(float) ** 2) * 1e-4
    curves = error_vs_k(s, cost, ["seqpoint", "first"], [1, 4, 9])
    sp = curves["seqpoint"]
    assert sp.ks == (1, 4)  # k = 9 exceeds the 8 iterations and is skipped
    assert sp.at(4) == pytest.approx(0.0, abs=1e-12)  # 4 unique signatures: exact
    assert curves["first"].at(4) == pytest.approx(0.0, abs=1e-12)  # first 4 cover every length once
    assert curves["first"].at(1) < 0  # first iteration is the shortest: underestimates


def test_error_vs_k_checks_shape():
    with pytest.raises(ValueError, match="shape"):
        error_vs_k(_schedule(), np.ones(3), ["first"], [1])
