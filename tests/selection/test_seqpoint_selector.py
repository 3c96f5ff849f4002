"""SeqPointSelector: exact results on hand-built schedules, invariants, every validation rule."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqpoint.exceptions import AdjustedInputWarning, ConfigError, InputError, NotFittedError
from seqpoint.projection import project_cost
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import (
    SeqPointSelector,
    basis_components,
    make_selector,
    read_seqpoints,
    write_seqpoints,
)


def basis_error(schedule: IterationSchedule, sel: SeqPointSelector, *, counts: bool = False) -> float:
    """Worst relative basis error of ``weights_`` (or of the group counts, ``counts=True``)."""
    _, comps = basis_components(schedule)
    true = comps.sum(axis=0)
    w = np.bincount(sel.labels_, minlength=sel.n_points_).astype(float) if counts else sel.weights_
    proj = w @ comps[sel.points_]
    keep = true > 0
    return float(np.max(np.abs(proj[keep] - true[keep]) / true[keep]))


def test_k1_picks_the_signature_nearest_the_mean_proxy(tiny: IterationSchedule) -> None:
    sel = SeqPointSelector(n_points=1, cost="tokens").fit(tiny)
    # Mean tokens 300/8 = 37.5: seq_len 30 (row 5) is the nearest.
    assert sel.points_.tolist() == [5]
    assert sel.weights_.tolist() == [8.0]
    assert sel.labels_.tolist() == [0] * 8


def test_k2_exact_groups_weights_and_error(tiny: IterationSchedule) -> None:
    sel = SeqPointSelector(n_points=2, cost="tokens").fit(tiny)
    assert sel.points_.tolist() == [3, 6]  # seq_len 20 for {10, 20, 30}, 100 for {100}
    assert sel.weights_.tolist() == [6.0, 2.0]
    assert sel.labels_.tolist() == [0, 0, 0, 0, 0, 0, 1, 1]
    # Tokens: 6·20 + 2·100 = 320 against 300 (the worst basis component).
    assert sel.estimated_error_ == pytest.approx(20 / 300)
    assert sel.n_points_ == 2 and sel.n_iterations_ == 8


def test_k3_optimal_and_sl_bins(tiny: IterationSchedule) -> None:
    a = SeqPointSelector(n_points=3, cost="tokens").fit(tiny)
    # Optimal: {10}, {20, 20, 30} (mean 23.3, nearest 20), {100}.
    assert a.points_.tolist() == [0, 3, 6]
    assert a.weights_.tolist() == [3.0, 3.0, 2.0]
    assert a.labels_.tolist() == [0, 0, 0, 1, 1, 1, 2, 2]
    # Equal-width bins over 10..100: 5 bins of width 18.2 leave {10, 20}, {30}, {100}.
    b = SeqPointSelector(n_points=3, cost="tokens", grouping="sl_bins").fit(tiny)
    assert b.points_.tolist() == [0, 5, 6]
    assert b.weights_.tolist() == [5.0, 1.0, 2.0]
    assert b.labels_.tolist() == [0, 0, 0, 0, 0, 1, 2, 2]


def test_k_at_least_unique_signatures_is_exact(tiny: IterationSchedule) -> None:
    sel = SeqPointSelector(n_points=4).fit(tiny)
    assert sel.points_.tolist() == [0, 3, 5, 6]
    assert sel.weights_.tolist() == [3.0, 2.0, 1.0, 2.0]
    assert sel.estimated_error_ == 0.0
    cost = np.sin(tiny.seq_len) + 2.0
    assert project_cost(tiny, sel, cost) == pytest.approx(cost.sum(), rel=1e-12)


def test_more_points_than_signatures_warns_and_caps(tiny: IterationSchedule) -> None:
    with pytest.warns(AdjustedInputWarning, match="exceeds the schedule's 4 unique signatures"):
        sel = SeqPointSelector(n_points=6).fit(tiny)
    assert sel.n_points_ == 4


def test_max_error_picks_the_smallest_k(tiny: IterationSchedule) -> None:
    sel = SeqPointSelector(max_error=0.07, cost="tokens").fit(tiny)
    assert sel.n_points_ == 2
    assert sel.estimated_error_ <= 0.07
    assert SeqPointSelector(max_error=0.01, cost="tokens").fit(tiny).n_points_ == 4


def test_proxy_tie_keeps_the_typical_shape() -> None:
    # (1, 20) and (2, 10) have the same token count; (2, 10) is closer to the
    # group's mean batch size, attention term and steps.
    sched = IterationSchedule.from_columns({"batch_size": [1, 1, 1, 2, 2, 2, 2, 2], "seq_len": [20] * 3 + [10] * 5})
    sel = SeqPointSelector(n_points=1, cost="tokens").fit(sched)
    assert sel.points_.tolist() == [3]


def test_estimated_error_is_the_count_weights_basis_error(mixed: IterationSchedule) -> None:
    for k in (1, 3, 8, 20):
        sel = SeqPointSelector(n_points=k).fit(mixed)
        assert sel.estimated_error_ == pytest.approx(basis_error(mixed, sel, counts=True), rel=1e-9, abs=1e-15)
        assert sel.calibrated_error_ == pytest.approx(basis_error(mixed, sel), rel=1e-9, abs=1e-15)
        assert sel.calibrated_error_ <= sel.estimated_error_


def test_refinement_helps_mixed_shapes(mixed: IterationSchedule) -> None:
    errs = [SeqPointSelector(n_points=k).fit(mixed).estimated_error_ for k in (2, 5, 10, 20)]
    assert errs[-1] < errs[0]
    assert errs[-1] < 0.05


def test_calibrated_weights_make_every_basis_component_exact(mixed: IterationSchedule) -> None:
    # Batch size, source and target lengths all vary: the count weights miss the basis
    # totals, the calibrated ones reproduce them (so any linear mix of them) exactly.
    names, comps = basis_components(mixed)
    for k in (10, 12, 20):
        counts = SeqPointSelector(n_points=k, weights="counts").fit(mixed)
        cal = SeqPointSelector(n_points=k).fit(mixed)
        assert counts.estimated_error_ > 1e-3
        # The reported bound stays the count weights'; the calibrated basis error is ~0.
        assert cal.estimated_error_ == counts.estimated_error_
        assert cal.calibrated_error_ < 1e-9
        assert cal.calibrated_error_ == pytest.approx(basis_error(mixed, cal), abs=1e-15)
        assert np.array_equal(cal.labels_, counts.labels_) and np.array_equal(cal.points_, counts.points_)
        assert cal.weights_.sum() == pytest.approx(len(mixed), rel=1e-12) and np.all(cal.weights_ > 0)
        # Calibration adjusts the counts, it does not replace them.
        assert np.all((cal.weights_ / counts.weights_ > 0.5) & (cal.weights_ / counts.weights_ < 2))
        coef = np.random.default_rng(k).uniform(0.0, 1.0, len(names)) / comps.mean(axis=0)
        cost = comps @ coef
        assert project_cost(mixed, cal, cost) == pytest.approx(cost.sum(), rel=1e-9)


def test_unreachable_components_keep_a_miss_and_the_rest_is_exact() -> None:
    # group_by_length style: batches of 8, one short last batch of 3. Every point has
    # batch size 8, so Σ sequences (and the split of Σ tokens = 8·Σ steps) is out of reach
    # with Σ w = n; the calibration matches the reachable components exactly.
    sl = np.concatenate([np.repeat(np.arange(10, 110, 5), 10), [40]])
    bs = np.array([8] * 200 + [3])
    sched = IterationSchedule.from_columns({"batch_size": bs, "seq_len": sl})
    cal = SeqPointSelector(n_points=6).fit(sched)
    counts = SeqPointSelector(n_points=6, weights="counts").fit(sched)
    assert np.all(sched.batch_size[cal.points_] == 8)
    names, comps = basis_components(sched)
    miss = np.abs((cal.weights_ @ comps[cal.points_]) / comps.sum(axis=0) - 1)
    assert miss[names.index("sequences")] == pytest.approx(8 * 201 / (8 * 200 + 3) - 1, rel=1e-9)
    assert miss[names.index("iteration")] < 1e-12 and miss[names.index("quadratic")] < 1e-7
    # The calibrated basis error is the unreachable miss alone, below the count weights'
    # bound, which stays the reported estimate.
    assert cal.calibrated_error_ == pytest.approx(miss[names.index("sequences")], rel=1e-9)
    assert cal.calibrated_error_ < counts.estimated_error_ == cal.estimated_error_
    assert cal.weights_.sum() == pytest.approx(201.0, rel=1e-12) and np.all(cal.weights_ >= 0)


def test_calibration_keeps_counts_below_five_points(mixed: IterationSchedule) -> None:
    for k in (1, 2, 4):
        a = SeqPointSelector(n_points=k).fit(mixed)
        b = SeqPointSelector(n_points=k, weights="counts").fit(mixed)
        assert np.array_equal(a.weights_, b.weights_)
        assert np.array_equal(np.bincount(a.labels_, minlength=k), a.weights_)


def test_calibrated_weights_exact_values() -> None:
    # Batch 1, no target: sequences = iterations and steps = tokens, so the basis reduces
    # to Σ1 = 10, Σs = 245 and Σs² = 7625 over signatures 10 ×3, 20 ×2, 25, 30 ×2, 40, 50.
    sl = [10, 10, 10, 20, 20, 25, 30, 30, 40, 50]
    sched = IterationSchedule.from_columns({"batch_size": np.ones(10, dtype=np.int64), "seq_len": sl})
    cal = SeqPointSelector(n_points=5, cost="tokens").fit(sched)
    counts = SeqPointSelector(n_points=5, cost="tokens", weights="counts").fit(sched)
    # Groups {10}, {20, 25}, {30}, {40}, {50}; the middle one is represented by 20.
    assert counts.points_.tolist() == cal.points_.tolist() == [0, 3, 6, 8, 9]
    assert counts.weights_.tolist() == [3.0, 3.0, 2.0, 1.0, 1.0]
    s = np.array([10.0, 20.0, 30.0, 40.0, 50.0])
    w = cal.weights_
    assert w.sum() == pytest.approx(10.0, rel=1e-12)
    assert w @ s == pytest.approx(245.0, rel=1e-9) and w @ s**2 == pytest.approx(7625.0, rel=1e-9)
    # KL-closest to the counts: log(w / counts) is linear in (1, s, s²).
    a = np.stack([np.ones(5), s, s * s], axis=1)
    coef, *_ = np.linalg.lstsq(a, np.log(w / counts.weights_), rcond=None)
    assert a @ coef == pytest.approx(np.log(w / counts.weights_), abs=1e-7)
    assert cal.calibrated_error_ < 1e-9 < counts.estimated_error_ == cal.estimated_error_


def test_max_error_chooses_k_on_the_groups_then_calibrates(mixed: IterationSchedule) -> None:
    a = SeqPointSelector(max_error=0.01).fit(mixed)
    b = SeqPointSelector(max_error=0.01, weights="counts").fit(mixed)
    assert a.n_points_ == b.n_points_ and np.array_equal(a.points_, b.points_)
    assert a.estimated_error_ == b.estimated_error_ <= 0.01
    assert a.calibrated_error_ <= a.estimated_error_


def test_callable_cost_and_determinism(tiny: IterationSchedule) -> None:
    def cost(s: IterationSchedule) -> np.ndarray:
        return s.seq_len.astype(float) ** 2

    a = SeqPointSelector(n_points=2, cost=cost).fit(tiny)
    b = SeqPointSelector(n_points=2, cost=cost).fit(tiny)
    assert np.array_equal(a.points_, b.points_) and np.array_equal(a.weights_, b.weights_)


def test_to_seqpoints_and_get_params(tiny: IterationSchedule) -> None:
    sel = SeqPointSelector(n_points=2, cost="tokens").fit(tiny)
    sp = sel.to_seqpoints(tiny)
    assert sp.method == "seqpoint" and sp.n_iterations == 8
    assert [(p.iteration, p.seq_len, p.weight) for p in sp.points] == [(3, 20, 6.0), (6, 100, 2.0)]
    assert sp.meta["params"]["cost"] == "tokens"
    assert sp.meta["params"]["weights"] == "calibrated"
    assert sp.meta["estimated_error"] == pytest.approx(20 / 300)
    # Two points: fewer than the basis components, the counts are kept.
    assert sp.meta["calibrated_error"] == sp.meta["estimated_error"]
    assert sel.get_params()["n_points"] == 2
    with pytest.raises(ConfigError, match="fitted on 8"):
        sel.to_seqpoints(tiny.head(4))


def test_not_fitted() -> None:
    sel = SeqPointSelector(n_points=2)
    for name in ("points_", "weights_", "labels_", "estimated_error_", "calibrated_error_"):
        with pytest.raises(NotFittedError, match=f"not fitted yet; call fit\\(schedule\\) before reading '{name}'"):
            getattr(sel, name)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sel.nope  # noqa: B018


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "needs exactly one of 'n_points' and 'max_error'. Got neither."),
        ({"n_points": 2, "max_error": 0.1}, "needs exactly one of 'n_points' and 'max_error'. Got both."),
        ({"n_points": 0}, "The 'n_points' parameter of SeqPointSelector must be an int >= 1. Got 0."),
        ({"n_points": True}, "The 'n_points' parameter of SeqPointSelector must be an int >= 1. Got True."),
        ({"n_points": 2.5}, "The 'n_points' parameter of SeqPointSelector must be an int >= 1. Got 2.5."),
        ({"n_points": 9}, "The 'n_points' parameter of SeqPointSelector must be <= the schedule's 8 iterations. Got 9."),
        ({"max_error": 0}, "The 'max_error' parameter of SeqPointSelector must be a float in (0, 1)"),
        ({"max_error": 1.0}, "must be a float in (0, 1) (a fraction: 0.001 is 0.1%). Got 1.0."),
        ({"max_error": "1%"}, "must be a float in (0, 1) (a fraction: 0.001 is 0.1%). Got '1%'."),
        ({"n_points": 2, "weights": "uniform"}, "The 'weights' parameter of SeqPointSelector must be one of 'calibrated', 'counts'. Got 'uniform'."),
        ({"n_points": 2, "grouping": "kmeans"}, "The 'grouping' parameter of SeqPointSelector must be one of 'optimal', 'sl_bins'. Got 'kmeans'."),
        ({"n_points": 2, "cost": 3}, "The 'cost' parameter of SeqPointSelector must be a cost model name (attention, quadratic, seq_len, tokens), a callable f(schedule) or a PilotTable. Got 3."),
        ({"n_points": 2, "cost": "flops"}, "Unknown cost model 'flops'. Valid names: attention, quadratic, seq_len, tokens."),
        ({"n_points": 2, "random_state": -1}, "The 'random_state' parameter of SeqPointSelector must be None or an int >= 0. Got -1."),
    ],
)
def test_validation(tiny: IterationSchedule, params: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        SeqPointSelector(**params).fit(tiny)


def test_fit_needs_a_schedule() -> None:
    with pytest.raises(ConfigError, match="expects an IterationSchedule. Got list"):
        SeqPointSelector(n_points=1).fit([1, 2])  # type: ignore[arg-type]


def test_bad_proxy_output(tiny: IterationSchedule) -> None:
    with pytest.raises(InputError, match=r"returned shape \(3,\); it must return one value per iteration, shape \(8,\)"):
        SeqPointSelector(n_points=1, cost=lambda s: np.ones(3)).fit(tiny)
    with pytest.raises(InputError, match="returned -1.0 for row 0; costs must be finite and >= 0"):
        SeqPointSelector(n_points=1, cost=lambda s: -np.ones(len(s))).fit(tiny)


def test_sl_bins_cannot_split_one_length_warns() -> None:
    sched = IterationSchedule.from_columns({"batch_size": [1, 2, 3, 4], "seq_len": [8, 8, 8, 8]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AdjustedInputWarning, match="1 distinct seq_len values"):
            SeqPointSelector(n_points=2, grouping="sl_bins").fit(sched)
    with pytest.warns(AdjustedInputWarning, match="No k reaches max_error"):
        sel = SeqPointSelector(max_error=1e-6, grouping="sl_bins").fit(sched)
    assert sel.n_points_ == 1


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 4), st.integers(1, 60), st.integers(0, 3)), min_size=1, max_size=40),
    st.integers(1, 12),
    st.sampled_from(["optimal", "sl_bins"]),
)
def test_invariants(rows: list[tuple[int, int, int]], k: int, grouping: str) -> None:
    arr = np.array(rows)
    sched = IterationSchedule.from_columns({"batch_size": arr[:, 0], "seq_len": arr[:, 1], "tgt_len": arr[:, 2]})
    k = min(k, len(sched))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AdjustedInputWarning)
        sel = SeqPointSelector(n_points=k, grouping=grouping, weights="counts").fit(sched)
        cal = SeqPointSelector(n_points=k, grouping=grouping).fit(sched)
    n = len(sched)
    for s in (sel, cal):
        assert s.weights_.sum() == pytest.approx(n)
        assert np.all(s.weights_ >= 0)
        assert s.points_.dtype == np.int64 and s.labels_.shape == (n,)
        assert np.all(np.diff(s.points_) > 0)
        # Every point represents its own iteration.
        assert np.array_equal(s.labels_[s.points_], np.arange(s.n_points_))
        assert s.estimated_error_ == pytest.approx(basis_error(sched, s, counts=True), abs=1e-12)
        assert s.calibrated_error_ == pytest.approx(basis_error(sched, s), abs=1e-12)
        assert s.calibrated_error_ <= s.estimated_error_
    # Count weights count the iterations each point represents.
    assert np.array_equal(np.bincount(sel.labels_, minlength=sel.n_points_), sel.weights_)
    assert sel.calibrated_error_ == sel.estimated_error_
    # Calibration keeps the groups and points and never raises the basis error.
    assert np.array_equal(cal.points_, sel.points_) and np.array_equal(cal.labels_, sel.labels_)
    assert cal.estimated_error_ == sel.estimated_error_
    assert cal.calibrated_error_ <= sel.estimated_error_ * (1 + 1e-9)
    if cal.n_points_ < 5:  # fewer points than basis components: the counts are kept
        assert np.array_equal(cal.weights_, sel.weights_)
    if k >= len(np.unique(sched.signature_matrix(), axis=0)) and grouping == "optimal":
        assert sel.estimated_error_ == 0.0
        assert np.array_equal(cal.weights_, sel.weights_)


def curved_run() -> IterationSchedule:
    """3,000 batch-16 iterations of log-normal lengths: a cost curved in seq_len."""
    rng = np.random.default_rng(3)
    sl = np.clip(np.round(rng.lognormal(4.0, 0.6, 3000)), 4, 600).astype(np.int64)
    return IterationSchedule.from_columns({"batch_size": np.full(3000, 16), "seq_len": sl})


@pytest.mark.parametrize("k", [5, 6, 8, 12, 20])
def test_estimated_error_stays_the_count_bound_after_calibration(k: int) -> None:
    # From k = 5 = J calibration makes the basis error 0 by construction; the reported
    # estimate must not follow it there, since a real cost keeps its curvature error.
    sched = curved_run()
    cal = SeqPointSelector(n_points=k).fit(sched)
    counts = SeqPointSelector(n_points=k, weights="counts").fit(sched)
    assert cal.calibrated_error_ < 1e-9
    assert cal.estimated_error_ == counts.estimated_error_ > 1e-3
    assert cal.estimated_error_ >= cal.calibrated_error_
    s = sched.seq_len.astype(float)
    cost = 16 * s * np.log(s)  # between the per-token and the quadratic component
    err = abs(project_cost(sched, cal, cost) / cost.sum() - 1)
    assert 1e-6 < err <= cal.estimated_error_


def test_seqpoints_json_round_trip_keeps_both_errors(mixed: IterationSchedule, tmp_path: Path) -> None:
    sel = SeqPointSelector(n_points=12).fit(mixed)
    sp = sel.to_seqpoints(mixed)
    assert sp.meta["estimated_error"] == sel.estimated_error_ > 1e-3
    assert sp.meta["calibrated_error"] == sel.calibrated_error_ < 1e-9
    write_seqpoints(sp, tmp_path / "SEQPOINTS.json")
    back = read_seqpoints(tmp_path / "SEQPOINTS.json")
    assert back.meta == sp.meta
    assert back.meta["estimated_error"] == sel.estimated_error_  # exact float round trip
    assert back == sp
    # Baselines without an estimate record neither key.
    first = make_selector("first", n_points=3).fit(mixed).to_seqpoints(mixed)
    assert "estimated_error" not in first.meta and "calibrated_error" not in first.meta
