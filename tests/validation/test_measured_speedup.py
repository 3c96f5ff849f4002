"""MeasuredSpeedup: the speedup of full runs timed in rounds, its noise floor and error."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seqpoint.exceptions import InputError
from seqpoint.validation import MeasuredSpeedup


def test_ratio_of_means_floor_and_standard_error() -> None:
    m = MeasuredSpeedup.from_rounds([(10.0, 5.0), (12.0, 5.0), (11.0, 5.5)])
    assert m.n_rounds == 3
    assert m.value == pytest.approx(11.0 / (15.5 / 3))
    # every pairing: 10/5, 10/5.5, 12/5, 12/5.5, ... spread (2.4 - 1.818) / mean
    pairs = [a / b for a in (10.0, 12.0, 11.0) for b in (5.0, 5.0, 5.5)]
    assert m.noise_floor == pytest.approx((max(pairs) - min(pairs)) / (sum(pairs) / len(pairs)))
    per_round = [2.0, 2.4, 2.0]
    mean = sum(per_round) / 3
    sd = (sum((r - mean) ** 2 for r in per_round) / 2) ** 0.5
    assert m.standard_error == pytest.approx(sd / 3**0.5 / m.value)
    assert m.error_of(m.value * 1.05) == pytest.approx(0.05)
    assert m.held_by((m.value, m.value)) and not m.held_by((m.value * 1.01, m.value * 1.1))
    d = m.to_dict()
    assert d["runs_a_s"] == [10.0, 12.0, 11.0] and d["speedup"] == pytest.approx(m.value)


def test_one_round_has_no_spread() -> None:
    m = MeasuredSpeedup((4.0,), (2.0,))
    assert m.value == 2.0 and m.noise_floor == 0.0 and m.standard_error is None


@pytest.mark.parametrize(("a", "b", "match"), [
    ((1.0, 2.0), (1.0,), "one run of each configuration per round"),
    ((), (), "one run of each configuration per round"),
    ((1.0,), (0.0,), "positive, finite"),
    ((float("nan"),), (1.0,), "positive, finite"),
])
def test_bad_runs_are_refused(a: tuple[float, ...], b: tuple[float, ...], match: str) -> None:
    with pytest.raises(InputError, match=match):
        MeasuredSpeedup(a, b)


@given(st.lists(st.tuples(st.floats(0.1, 100), st.floats(0.1, 100)), min_size=1, max_size=8),
       st.floats(0.01, 100))
def test_scaling_both_configurations_leaves_the_ratio_and_floor(rounds: list[tuple[float, float]],
                                                                k: float) -> None:
    m = MeasuredSpeedup.from_rounds(rounds)
    scaled = MeasuredSpeedup.from_rounds([(a * k, b * k) for a, b in rounds])
    assert scaled.value == pytest.approx(m.value, rel=1e-9)
    assert scaled.noise_floor == pytest.approx(m.noise_floor, rel=1e-6, abs=1e-12)
    a_s, b_s = [a for a, _ in rounds], [b for _, b in rounds]
    assert min(a_s) / max(b_s) * (1 - 1e-12) <= m.value <= max(a_s) / min(b_s) * (1 + 1e-12)


def test_agreement_counts_the_measured_ratios_own_error() -> None:
    m = MeasuredSpeedup.from_rounds([(10.0, 5.0), (12.0, 5.0), (11.0, 5.5)])
    se = m.standard_error
    assert se is not None
    reach = ((0.01 * m.value) ** 2 + (1.959963984540054 * se * m.value) ** 2) ** 0.5
    # a projection outside its own ±1% interval, but within the truth's own 95% error
    p = m.value + 0.99 * reach
    assert not m.held_by((p - 0.01 * m.value, p + 0.01 * m.value))
    assert m.agrees_with(p, (p - 0.01 * m.value, p + 0.01 * m.value))
    assert not m.agrees_with(m.value + 1.01 * reach, (p - 0.01 * m.value, p + 0.01 * m.value))
    # a wider confidence reaches further; one round has no standard error to count
    assert m.agrees_with(m.value + 1.01 * reach, (p - 0.01 * m.value, p + 0.01 * m.value), confidence=0.99)
    assert MeasuredSpeedup((4.0,), (2.0,)).agrees_with(2.5, (2.4, 2.6)) is None


@given(st.lists(st.tuples(st.floats(0.1, 100), st.floats(0.1, 100)), min_size=2, max_size=8),
       st.floats(0.01, 100), st.floats(0.01, 1))
def test_an_interval_that_holds_the_speedup_agrees_with_it(rounds: list[tuple[float, float]], projected: float,
                                                          where: float) -> None:
    m = MeasuredSpeedup.from_rounds(rounds)
    half = abs(projected - m.value) * (1 + where)
    assert m.held_by((projected - half, projected + half))
    assert m.agrees_with(projected, (projected - half, projected + half))
