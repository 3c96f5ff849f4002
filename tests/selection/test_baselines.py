"""Baselines: exact behaviour on tiny schedules, the registry, seeds, validation."""

from __future__ import annotations

import re

import numpy as np
import pytest

from seqpoint.exceptions import ConfigError, NotFittedError
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SELECTORS, make_selector

ALL = ["first", "mean", "median", "mode", "random", "seqpoint", "simpoint", "stratified", "stride"]


def test_registry_names() -> None:
    assert SELECTORS.names() == ALL
    with pytest.raises(ConfigError, match=re.escape(f"Unknown selection method 'best'. Valid names: {', '.join(ALL)}.")):
        make_selector("best")
    with pytest.raises(ConfigError, match=r"Unknown parameter\(s\) 'k' for the 'first' selector. Valid parameters: n_points, random_state."):
        make_selector("first", k=3)


def test_first_and_stride(tiny: IterationSchedule) -> None:
    sel = make_selector("first", n_points=3).fit(tiny)
    assert sel.points_.tolist() == [0, 1, 2]
    assert np.allclose(sel.weights_, 8 / 3)
    assert sel.labels_.tolist() == [0, 0, 0, 1, 1, 1, 2, 2]
    st = make_selector("stride", n_points=2).fit(tiny)
    assert st.points_.tolist() == [2, 6]
    assert st.weights_.tolist() == [4.0, 4.0]
    assert st.labels_.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_random_is_seeded(tiny: IterationSchedule) -> None:
    a = make_selector("random", n_points=3, random_state=5).fit(tiny)
    b = make_selector("random", n_points=3, random_state=5).fit(tiny)
    assert np.array_equal(a.points_, b.points_)
    assert len(set(a.points_.tolist())) == 3
    assert np.allclose(a.weights_, 8 / 3)
    assert np.array_equal(a.labels_[a.points_], np.arange(3))
    draws = {tuple(make_selector("random", n_points=3, random_state=s).fit(tiny).points_) for s in range(10)}
    assert len(draws) > 1


def test_typical_signature_baselines(tiny: IterationSchedule) -> None:
    # Mean seq_len 37.5 -> 30 (row 5); median over iterations 20 (row 3); mode 10 (row 0).
    assert make_selector("mean", n_points=1).fit(tiny).points_.tolist() == [5]
    assert make_selector("median", n_points=1).fit(tiny).points_.tolist() == [3]
    mode = make_selector("mode", n_points=1).fit(tiny)
    assert mode.points_.tolist() == [0] and mode.weights_.tolist() == [8.0]
    # k iterations of the mode signature, capped by its three occurrences.
    three = make_selector("mode", n_points=5).fit(tiny)
    assert three.points_.tolist() == [0, 1, 2]
    assert np.allclose(three.weights_, 8 / 3)


def test_mean_prefers_the_mean_batch_size() -> None:
    sched = IterationSchedule.from_columns({"batch_size": [2, 8, 8, 8], "seq_len": [10, 10, 10, 30]})
    # Mean seq_len 15 -> 10; mean batch 6.5 -> batch 8 (row 1) over batch 2.
    assert make_selector("mean", n_points=1).fit(sched).points_.tolist() == [1]


def test_simpoint_bic_finds_two_clusters() -> None:
    sl = np.concatenate([np.arange(10, 30), np.arange(500, 520)]).repeat(5)
    sched = IterationSchedule.from_columns({"batch_size": np.full(200, 4), "seq_len": sl})
    sel = make_selector("simpoint", n_points=4, random_state=0).fit(sched)
    assert sel.n_points_ == 2
    assert sorted(sel.weights_.tolist()) == [100.0, 100.0]
    assert set(sel.bic_) == {1, 2, 3, 4}
    fixed = make_selector("simpoint", n_points=4, choose_k="fixed").fit(sched)
    assert fixed.n_points_ == 4 and fixed.estimated_error_ is None
    again = make_selector("simpoint", n_points=4, choose_k="fixed").fit(sched)
    assert np.array_equal(fixed.points_, again.points_)


def test_stratified(tiny: IterationSchedule) -> None:
    sel = make_selector("stratified", n_points=4, n_strata=2, cost="tokens", random_state=1).fit(tiny)
    assert sel.n_strata_ == 2
    assert sel.weights_.sum() == pytest.approx(8)
    assert sel.estimated_error_ is not None and sel.estimated_error_ >= 0
    same = make_selector("stratified", n_points=4, n_strata=2, cost="tokens", random_state=1).fit(tiny)
    assert np.array_equal(sel.points_, same.points_)
    # One stratum per sample on distinct values: every sample its own stratum, no error.
    full = make_selector("stratified", n_points=8, n_strata=8).fit(tiny)
    assert sorted(full.points_.tolist()) == list(range(8))
    assert full.estimated_error_ == 0.0


@pytest.mark.parametrize("name", ALL)
def test_common_contract(name: str, tiny: IterationSchedule) -> None:
    sel = make_selector(name, n_points=3, random_state=2)
    with pytest.raises(NotFittedError):
        sel.points_  # noqa: B018
    assert sel.fit(tiny) is sel
    n = len(tiny)
    assert sel.weights_.sum() == pytest.approx(n)
    assert sel.points_.dtype == np.int64 and sel.weights_.dtype == np.float64
    assert sel.labels_.shape == (n,) and sel.labels_.max() < sel.n_points_
    assert np.all(np.diff(sel.points_) > 0)
    sp = sel.to_seqpoints(tiny)
    assert sp.method == name and len(sp) == sel.n_points_


@pytest.mark.parametrize("name", [n for n in ALL if n != "seqpoint"])
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n_points": 0}, "parameter of {cls} must be an int >= 1. Got 0."),
        ({"n_points": None}, "parameter of {cls} must be an int >= 1. Got None."),
        ({"n_points": 9}, "parameter of {cls} must be <= the schedule's 8 iterations. Got 9."),
        ({"n_points": 2, "random_state": -3}, "The 'random_state' parameter of {cls} must be None or an int >= 0. Got -3."),
    ],
)
def test_baseline_validation(name: str, params: dict, message: str, tiny: IterationSchedule) -> None:
    sel = make_selector(name, **params)
    with pytest.raises(ConfigError, match=re.escape(message.format(cls=type(sel).__name__))):
        sel.fit(tiny)


@pytest.mark.parametrize(
    ("sel", "message"),
    [
        (make_selector("stratified", n_points=2, n_strata=0), "The 'n_strata' parameter of StratifiedSelector must be None or an int >= 1. Got 0."),
        (make_selector("stratified", n_points=2, n_strata=3), "The 'n_strata' parameter of StratifiedSelector must be <= n_points (2). Got 3."),
        (make_selector("stratified", n_points=2, cost=1.5), "The 'cost' parameter of StratifiedSelector must be a cost model name"),  # type: ignore[arg-type]
        (make_selector("simpoint", n_points=2, choose_k="aic"), "The 'choose_k' parameter of SimPointSelector must be one of 'bic', 'fixed'. Got 'aic'."),
        (make_selector("simpoint", n_points=2, n_init=0), "The 'n_init' parameter of SimPointSelector must be an int >= 1. Got 0."),
    ],
)
def test_specific_validation(sel: object, message: str, tiny: IterationSchedule) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        sel.fit(tiny)  # type: ignore[attr-defined]
