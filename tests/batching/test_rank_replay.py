"""Data-parallel replay: the rank layout, and equality with torch's DistributedSampler."""

from __future__ import annotations

import numpy as np
import pytest

from seqpoint.batching import POLICIES, from_batch_sampler, make_policy, replay
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.schedule import IterationSchedule

torch = pytest.importorskip("torch")
from torch.utils.data import BatchSampler, DistributedSampler  # noqa: E402


def _lengths(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(1, 500, size=n)


def _rank_shapes(sched: IterationSchedule, rank: int) -> list[tuple[int, int, int]]:
    one = sched.for_rank(rank)
    return list(zip(one.batch_size.tolist(), one.seq_len.tolist(), one.tokens.tolist(), strict=True))


def _expected(lengths: np.ndarray, perms: list[np.ndarray], rank: int, *, world_size: int,
              batch_size: int, drop_last: bool) -> list[tuple[int, int, int]]:
    """What BatchSampler(DistributedSampler(rank=r)) yields, mapped through each epoch's order."""
    out = []
    sampler = DistributedSampler(range(len(lengths)), num_replicas=world_size, rank=rank,
                                 shuffle=False, drop_last=drop_last)
    for perm in perms:
        for batch in BatchSampler(sampler, batch_size, drop_last=drop_last):
            lens = lengths[perm[np.asarray(batch)]]
            out.append((len(batch), int(lens.max()), int(lens.sum())))
    return out


@pytest.mark.parametrize("n", [37, 40, 3])
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("world_size", [2, 3])
def test_fixed_replay_equals_distributed_sampler_batch_for_batch(n, drop_last, world_size):
    lengths = _lengths(n)
    policy = make_policy("fixed", batch_size=4, drop_last=drop_last)
    epochs, seed = 2, 7
    if drop_last and n // world_size < 4:  # every rank's only batch is partial: all dropped
        with pytest.raises(InputError, match="every sample was dropped"):
            policy.replay(lengths, epochs=epochs, seed=seed, world_size=world_size)
        return
    # The policy's own permutation of every epoch (single process, nothing dropped).
    full = make_policy("fixed", batch_size=4).plan(replay_lengths(lengths), epochs=epochs, seed=seed)
    perms = [full.order[full.epoch.repeat(np.diff(full.offsets)) == e] for e in range(epochs)]
    sched = policy.replay(lengths, epochs=epochs, seed=seed, world_size=world_size)
    assert sched.world_size == world_size
    for r in range(world_size):
        assert _rank_shapes(sched, r) == _expected(
            lengths, perms, r, world_size=world_size, batch_size=4, drop_last=drop_last
        )


def replay_lengths(lengths: np.ndarray):  # the Lengths object the policy plans over
    from seqpoint.traces import from_array

    return from_array(lengths)


@pytest.mark.parametrize("drop_last", [False, True])
def test_sorted_replay_equals_distributed_sampler_over_sorted_data(drop_last):
    lengths = np.sort(_lengths(51, seed=3))
    sched = make_policy("sorted", batch_size=5, drop_last=drop_last).replay(lengths, world_size=2)
    for r in range(2):
        assert _rank_shapes(sched, r) == _expected(
            lengths, [np.arange(51)], r, world_size=2, batch_size=5, drop_last=drop_last
        )


@pytest.mark.parametrize("drop_last", [False, True])
def test_from_batch_sampler_over_distributed_sampler_matches_each_rank(drop_last):
    lengths = _lengths(45, seed=1)
    samplers = [
        BatchSampler(DistributedSampler(range(45), num_replicas=2, rank=r, shuffle=True, seed=5,
                                        drop_last=drop_last), 4, drop_last=drop_last)
        for r in range(2)
    ]
    from_list = from_batch_sampler(samplers, lengths, epochs=2)
    # With all_ranks, one sampler of rank 0 stands for both ranks.
    from_one = from_batch_sampler(samplers[0], lengths, epochs=2, all_ranks=True)
    assert from_list.equals(from_one)
    for r in range(2):
        expected = []
        for e in range(2):
            samplers[r].sampler.set_epoch(e)
            for batch in samplers[r]:
                lens = lengths[np.asarray(batch)]
                expected.append((len(batch), int(lens.max()), int(lens.sum())))
        assert _rank_shapes(from_list, r) == expected


def test_every_sample_once_across_ranks_within_an_epoch():
    lengths = _lengths(64)
    for name in ("fixed", "sorted", "sortagrad", "group_by_length"):
        sched = replay(lengths, name, batch_size=8, world_size=4, epochs=2)
        per_epoch = np.bincount(sched.epoch, weights=sched.batch_size)
        assert per_epoch.tolist() == [64, 64]
        assert np.array_equal(sched.rank, np.tile(np.arange(4), len(sched) // 4))
        assert np.array_equal(sched.iteration, np.repeat(np.arange(len(sched) // 4), 4))


@pytest.mark.parametrize("name", sorted(POLICIES.names()))
def test_every_policy_gives_the_rank_layout_and_is_unchanged_at_world_size_1(name):
    lengths = _lengths(200, seed=4)
    params = {"fixed": {"batch_size": 8}, "sorted": {"batch_size": 8}, "sortagrad": {"batch_size": 8},
              "bucket": {"batch_size": 8, "num_buckets": 3, "drop_last": False},
              "token_budget": {"max_tokens": 2000}, "group_by_length": {"batch_size": 8},
              "dynamic_bucket": {"max_duration": 2000.0, "num_buckets": 3},
              "packing": {"max_seq_len": 1024, "batch_size": 2}}[name]
    one = replay(lengths, name, epochs=2, seed=3, **params)
    assert one.rank is None and "world_size" not in one.meta
    assert one.equals(replay(lengths, name, epochs=2, seed=3, world_size=1, **params))
    dp = replay(lengths, name, epochs=2, seed=3, world_size=3, **params)
    assert dp.world_size == 3 and len(dp) % 3 == 0
    if dp.meta["shard"] == "batches":
        # Round-robin whole batches: the epoch's batches, padded with its first ones.
        for e in range(2):
            ours = one.take(one.epoch == e)
            dealt = dp.take(dp.epoch == e)
            m = len(ours)
            idx = np.arange(len(dealt)) % m
            assert np.array_equal(dealt.seq_len, ours.seq_len[idx])
            assert np.array_equal(dealt.batch_size, ours.batch_size[idx])


def test_batches_mode_drops_the_incomplete_round_with_drop_last():
    lengths = np.arange(1, 11)  # bucket of batch 2 → 5 batches per epoch
    keep = replay(lengths, "fixed", batch_size=2, world_size=2, shard="batches")
    drop = replay(lengths, "fixed", batch_size=2, world_size=2, shard="batches", drop_last=True)
    assert len(keep) == 6 and keep.meta["rank_padded_batches"] == 1
    assert len(drop) == 4 and drop.meta["rank_dropped_batches"] == 1


def test_bad_world_size_and_shard_are_one_line_each():
    with pytest.raises(ConfigError, match="'world_size' parameter.*>= 1"):
        replay(np.arange(1, 5), "fixed", world_size=0)
    with pytest.raises(ConfigError, match="shard='samples' needs"):
        replay(np.arange(1, 50), "token_budget", max_tokens=100, world_size=2, shard="samples")
    with pytest.raises(ConfigError, match="'shard' parameter must be one of"):
        replay(np.arange(1, 5), "fixed", world_size=2, shard="tokens")


def test_unequal_rank_samplers_are_refused():
    with pytest.raises(InputError, match=r"yielded \[2, 1\] batches in epoch 0"):
        from_batch_sampler([[[0], [1]], [[2]]], np.arange(1, 4))
