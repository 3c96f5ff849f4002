"""Optimal 1-D weighted k-means against brute force over all contiguous partitions."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from seqpoint.selection import KMeans1D


def segment_sse(x: np.ndarray, w: np.ndarray, bounds: np.ndarray) -> float:
    """Weighted within-group sum of squares of the partition ``bounds`` (reference loop)."""
    total = 0.0
    for a, b in itertools.pairwise(bounds.tolist()):
        xs, ws = x[a:b], w[a:b]
        mean = float(np.sum(ws * xs) / np.sum(ws))
        total += float(np.sum(ws * (xs - mean) ** 2))
    return total


def brute_force(x: np.ndarray, w: np.ndarray, k: int) -> float:
    m = x.shape[0]
    return min(
        segment_sse(x, w, np.array([0, *cuts, m]))
        for cuts in itertools.combinations(range(1, m), k - 1)
    )


def test_hand_example() -> None:
    x = np.array([1.0, 2.0, 10.0, 11.0, 30.0])
    w = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
    km = KMeans1D(x, w)
    assert km.bounds(3).tolist() == [0, 2, 4, 5]
    assert np.isclose(km.sse(3), 1.0)  # 0.5 + 0.5 + 0
    assert km.bounds(1).tolist() == [0, 5]
    assert km.bounds(5).tolist() == [0, 1, 2, 3, 4, 5]
    assert km.sse(5) == 0.0


def test_weights_move_the_cut() -> None:
    # Two heavy points at 2 and 3 must not share a group: the light ones go with 2.
    x = np.array([0.0, 1.0, 2.0, 3.0])
    light = KMeans1D(x, np.array([1.0, 1.0, 1.0, 1.0])).bounds(2).tolist()
    heavy = KMeans1D(x, np.array([1.0, 1.0, 100.0, 100.0])).bounds(2).tolist()
    assert light == [0, 2, 4]
    assert heavy == [0, 3, 4]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=8),
    st.data(),
)
def test_matches_brute_force(values: list[int], data: st.DataObject) -> None:
    x = np.sort(np.array(values, dtype=np.float64))
    w = np.array(data.draw(st.lists(st.integers(1, 9), min_size=len(values), max_size=len(values))), dtype=np.float64)
    km = KMeans1D(x, w)
    for k in range(1, x.shape[0] + 1):
        best = brute_force(x, w, k)
        bounds = km.bounds(k)
        assert bounds[0] == 0 and bounds[-1] == x.shape[0]
        assert np.all(np.diff(bounds) >= 1)
        assert np.isclose(segment_sse(x, w, bounds), best, rtol=1e-9, atol=1e-9)
        assert np.isclose(km.sse(k), best, rtol=1e-7, atol=1e-7)


def test_large_inputs_are_monotone_in_k() -> None:
    rng = np.random.default_rng(3)
    x = np.sort(rng.gamma(2.0, 100.0, 3000))
    w = rng.integers(1, 50, 3000).astype(np.float64)
    km = KMeans1D(x, w)
    sse = [km.sse(k) for k in range(1, 30)]
    assert all(a >= b - 1e-6 * a for a, b in itertools.pairwise(sse))
    # The DP's reported optimum is the SSE of the partition it returns.
    assert np.isclose(segment_sse(x, w, km.bounds(12)), km.sse(12), rtol=1e-6)
