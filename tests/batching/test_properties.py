"""Invariants of every policy (hypothesis): coverage per epoch, batch limits, determinism."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from seqpoint.batching import largest_fitting, make_policy, pack_rows
from seqpoint.traces import from_array

LENGTHS = st.lists(st.integers(1, 60), min_size=1, max_size=80)
SIZES, SEEDS = st.integers(1, 9), st.integers(0, 1000)
POLICY_NAMES = ["fixed", "sorted", "sortagrad", "bucket", "token_budget", "group_by_length", "dynamic_bucket"]


def policy_for(name: str, bs: int, extra: int):  # type: ignore[no-untyped-def]
    return {
        "fixed": lambda: make_policy("fixed", batch_size=bs, drop_last=bool(extra % 2)),
        "sorted": lambda: make_policy("sorted", batch_size=bs, descending=bool(extra % 2)),
        "sortagrad": lambda: make_policy("sortagrad", batch_size=bs, shuffle=("batches", "samples")[extra % 2]),
        "bucket": lambda: make_policy("bucket", batch_size=bs, num_buckets=1 + extra % 4, drop_last=bool(extra % 2)),
        "token_budget": lambda: make_policy(
            "token_budget", max_tokens=60 + 10 * extra, batch_size=bs, required_batch_size_multiple=1 + extra % 3
        ),
        "group_by_length": lambda: make_policy("group_by_length", batch_size=bs, drop_last=bool(extra % 2)),
        "dynamic_bucket": lambda: make_policy(
            "dynamic_bucket", max_duration=60 + 20 * extra, max_cuts=bs, num_buckets=1, drop_last=bool(extra % 2)
        ),
    }[name]()


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(POLICY_NAMES), LENGTHS, SIZES, st.integers(0, 5), st.integers(1, 3), SEEDS)
def test_every_sample_once_per_epoch_or_dropped(name, lengths, bs, extra, epochs, seed) -> None:  # type: ignore[no-untyped-def]
    pol = policy_for(name, bs, extra)
    lens = from_array(lengths)
    plan = pol.plan(lens, epochs=epochs, seed=seed)
    batch_epoch = np.repeat(plan.epoch, np.diff(plan.offsets))
    for e in range(epochs):
        seen = plan.order[batch_epoch == e]
        assert len(np.unique(seen)) == len(seen)  # nobody twice
        assert len(seen) + int(plan.dropped[e]) == len(lengths)  # everybody else reported dropped
    assert np.all(np.diff(plan.offsets) >= 1)
    arr = np.asarray(lengths)
    for b in plan.batches():
        assert len(b) <= bs  # every policy here caps the batch size
        if name == "token_budget":
            assert len(b) * arr[b].max() <= pol.max_tokens
        if name == "dynamic_bucket" and len(b) > 1:
            # lhotse closes a batch once one more longest sample would overflow.
            assert len(b) * arr[b[:-1]].max() <= pol.max_duration


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([n for n in POLICY_NAMES if n != "sorted"] + ["packing"]), LENGTHS, SIZES, SEEDS)
def test_same_seed_same_schedule(name, lengths, bs, seed) -> None:  # type: ignore[no-untyped-def]
    if name == "packing":
        pol = make_policy("packing", max_seq_len=64, batch_size=bs)
    else:
        pol = policy_for(name, bs, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = pol.replay(from_array(lengths), epochs=2, seed=seed)
        b = pol.replay(from_array(lengths), epochs=2, seed=seed)
    assert a.equals(b) and a.meta == b.meta


def test_different_seeds_differ() -> None:
    lengths = np.random.default_rng(0).integers(1, 60, size=400)
    for name in ("fixed", "sortagrad", "bucket", "token_budget", "group_by_length", "dynamic_bucket"):
        pol = policy_for(name, 8, 0)
        a = pol.replay(from_array(lengths), epochs=2, seed=1)
        b = pol.replay(from_array(lengths), epochs=2, seed=2)
        assert not a.equals(b), name


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=40), st.integers(1, 20), st.integers(1, 4), st.integers(0, 1000))
def test_packing_conserves_tokens(lengths, max_seq_len, bs, seed) -> None:  # type: ignore[no-untyped-def]
    for drop in (False, True):
        pol = make_policy("packing", max_seq_len=max_seq_len, batch_size=bs, drop_last=drop)
        try:
            sched = pol.replay(from_array(lengths), epochs=2, seed=seed)
        except ValueError:
            assert drop  # everything can be dropped only with drop_last
            continue
        assert int(sched.tokens.sum()) + sched.meta["dropped_tokens"] == 2 * sum(lengths)
        assert np.all(sched.batch_size <= bs)
        assert np.all(sched.tokens <= sched.padded_tokens)


def reference_rows(docs: list[int], L: int) -> tuple[list[int], list[int]]:
    """Walk the token stream one piece at a time."""
    fill, sq = [0], [0]
    for d in docs:
        left = d
        while left:
            if fill[-1] == L:
                fill.append(0)
                sq.append(0)
            take = min(left, L - fill[-1])
            fill[-1] += take
            sq[-1] += take * take
            left -= take
    return fill, sq


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=30), st.integers(1, 25))
def test_pack_rows_matches_reference(docs, L) -> None:  # type: ignore[no-untyped-def]
    rows = pack_rows(np.asarray(docs, dtype=np.int64), L)
    fill, sq = reference_rows(docs, L)
    assert rows.fill.tolist() == fill and rows.sum_sq.tolist() == sq


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 20), min_size=1, max_size=40), st.integers(1, 80), st.integers(0, 1),
       st.integers(1, 40))
def test_largest_fitting_matches_loop(values, budget, extra, cap) -> None:  # type: ignore[no-untyped-def]
    v = np.asarray(values, dtype=np.int64)
    limit = np.minimum(len(v) - np.arange(len(v)), cap)
    got = largest_fitting(v, limit, budget, extra)
    for s in range(len(v)):
        k = 0
        while k < limit[s] and (k + 1 + extra) * v[s : s + k + 1].max() <= budget:
            k += 1
        assert got[s] == k
