"""A BatchPlan's schedule: the shapes of its batches of sample indices, exact on a hand-built
plan and against a plain loop."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from seqpoint.batching import BatchPlan
from seqpoint.traces import Lengths, from_array


def _shapes(order, offsets, epoch, lens: Lengths, pad_to_multiple_of: int = 1):  # type: ignore[no-untyped-def]
    plan = BatchPlan(order=np.asarray(order), offsets=np.asarray(offsets), epoch=np.asarray(epoch),
                     dropped=np.zeros(1, dtype=np.int64))
    return plan.to_schedule(lens, pad_to_multiple_of=pad_to_multiple_of, policy="plan", params={}, epochs=1, seed=0)


def test_a_plan_s_shapes_exact_columns():
    src = np.array([5, 3, 8, 2, 7])
    tgt = np.array([4, 6, 1, 2, 3])
    order = np.array([1, 3, 0, 2, 4])
    offsets = np.array([0, 2, 5])
    s = _shapes(order, offsets, np.array([0, 0]), from_array(src, tgt), pad_to_multiple_of=4)
    np.testing.assert_array_equal(s.batch_size, [2, 3])
    np.testing.assert_array_equal(s.seq_len, [4, 8])  # max 3 -> 4, max 8 -> 8
    np.testing.assert_array_equal(s.tgt_len, [8, 4])  # max 6 -> 8, max 4 -> 4
    np.testing.assert_array_equal(s.tokens, [3 + 2 + 6 + 2, 5 + 8 + 7 + 4 + 1 + 3])
    np.testing.assert_array_equal(s.padded_tokens, [2 * 12, 3 * 12])
    np.testing.assert_array_equal(s.sum_sq_len, [9 + 4, 25 + 64 + 49])


def _reference(order, offsets, src):
    rows = []
    for b in range(len(offsets) - 1):
        idx = order[offsets[b] : offsets[b + 1]]
        lens = [int(src[i]) for i in idx]
        rows.append((len(lens), max(lens), sum(lens), sum(x * x for x in lens)))
    return rows


@given(
    st.lists(st.integers(1, 500), min_size=1, max_size=60),
    st.integers(1, 7),
    st.integers(0, 2**31 - 1),
)
@settings(max_examples=60, deadline=None)
def test_a_plan_s_shapes_match_a_reference_loop(lengths, bs, seed):
    src = np.array(lengths)
    order = np.random.default_rng(seed).permutation(len(src))
    offsets = np.r_[np.arange(0, len(src), bs), len(src)]
    s = _shapes(order, offsets, np.zeros(len(offsets) - 1, dtype=int), from_array(src))
    got = list(zip(s.batch_size, s.seq_len, s.tokens, s.sum_sq_len, strict=True))
    assert got == _reference(order, offsets, src)
    assert s.tokens.sum() == src.sum()
    assert np.all(s.tgt_len == 0)
