"""Batching policies: exact batches on tiny hand-built inputs, and every validation rule."""

from __future__ import annotations

import numpy as np
import pytest

from seqpoint.batching import (
    POLICIES,
    batch_by_size,
    estimate_duration_buckets,
    make_policy,
    pack_rows,
    replay,
)
from seqpoint.exceptions import AdjustedInputWarning, ConfigError, InputError
from seqpoint.traces import from_array


def batches(policy, lengths, **kw) -> list[list[int]]:  # type: ignore[no-untyped-def]
    return [b.tolist() for b in policy.plan(from_array(lengths), **kw).batches()]


def test_registry_names() -> None:
    assert POLICIES.names() == [
        "bucket",
        "dynamic_bucket",
        "fixed",
        "group_by_length",
        "packing",
        "sortagrad",
        "sorted",
        "token_budget",
    ]


def test_fixed_unshuffled_exact() -> None:
    pol = make_policy("fixed", batch_size=2, shuffle=False)
    assert batches(pol, [5, 3, 8, 2, 7]) == [[0, 1], [2, 3], [4]]
    sched = pol.replay(from_array([5, 3, 8, 2, 7]), epochs=2)
    assert sched.batch_size.tolist() == [2, 2, 1] * 2
    assert sched.seq_len.tolist() == [5, 8, 7] * 2
    assert sched.epoch.tolist() == [0, 0, 0, 1, 1, 1]
    assert sched.tokens.tolist() == [8, 10, 7] * 2
    assert sched.padded_tokens.tolist() == [10, 16, 7] * 2
    assert sched.sum_sq_len.tolist() == [34, 68, 49] * 2


def test_fixed_drop_last_and_meta() -> None:
    sched = make_policy("fixed", batch_size=2, drop_last=True).replay(np.array([5, 3, 8, 2, 7]), epochs=3, seed=4)
    assert sched.batch_size.tolist() == [2] * 6
    assert sched.meta["dropped"] == 3 and sched.meta["dropped_per_epoch"] == [1, 1, 1]
    assert sched.meta["policy"] == "fixed" and sched.meta["seed"] == 4 and sched.meta["epochs"] == 3
    assert sched.meta["params"] == {"batch_size": 2, "drop_last": True, "shuffle": True, "pad_to_multiple_of": 1}
    assert sched.meta["n_samples"] == 5


def test_fixed_epochs_differ_but_cover_everything() -> None:
    plan = make_policy("fixed", batch_size=4).plan(from_array(np.arange(1, 41)), epochs=2, seed=0)
    first, second = plan.order[:40], plan.order[40:]
    assert sorted(first.tolist()) == sorted(second.tolist()) == list(range(40))
    assert first.tolist() != second.tolist()


def test_sorted_ascending_descending_ties() -> None:
    lens = from_array([5, 3, 8, 3, 7], tgt=[1, 4, 1, 2, 1])
    # Ties on src (3, 3) are broken by tgt: sample 3 (tgt 2) before sample 1 (tgt 4).
    assert batches(make_policy("sorted", batch_size=2), lens.src) == [[1, 3], [0, 4], [2]]
    assert [b.tolist() for b in make_policy("sorted", batch_size=2).plan(lens).batches()] == [[3, 1], [0, 4], [2]]
    assert batches(make_policy("sorted", batch_size=2, descending=True), [5, 3, 8, 3, 7]) == [[2, 4], [0, 1], [3]]


def test_pad_to_multiple_of() -> None:
    sched = make_policy("sorted", batch_size=2, pad_to_multiple_of=8).replay(
        from_array([5, 3, 9, 2], tgt=[1, 1, 1, 17])
    )
    assert sched.seq_len.tolist() == [8, 16]
    assert sched.tgt_len.tolist() == [24, 8]
    assert sched.padded_tokens.tolist() == [2 * (8 + 24), 2 * (16 + 8)]


def test_sortagrad_first_epoch_sorted_then_batches_shuffled() -> None:
    lens = [9, 1, 8, 2, 7, 3, 6, 4, 5]
    plan = make_policy("sortagrad", batch_size=2).plan(from_array(lens), epochs=3, seed=1)
    per_epoch = [
        [b.tolist() for b, e in zip(plan.batches(), plan.epoch, strict=True) if e == k] for k in range(3)
    ]
    assert per_epoch[0] == [[1, 3], [5, 7], [8, 6], [4, 2], [0]]
    for k in (1, 2):
        assert sorted(per_epoch[k]) == sorted(per_epoch[0])  # same batches (deepspeech.pytorch bins)
    assert per_epoch[1] != per_epoch[0] or per_epoch[2] != per_epoch[0]


def test_sortagrad_sample_shuffle_and_more_sorted_epochs() -> None:
    lens = from_array(np.arange(1, 21))
    pol = make_policy("sortagrad", batch_size=4, sorted_epochs=2, shuffle="samples")
    plan = pol.plan(lens, epochs=3, seed=0)
    assert plan.order[:20].tolist() == list(range(20)) == plan.order[20:40].tolist()
    assert plan.order[40:].tolist() != list(range(20))
    assert sorted(plan.order[40:].tolist()) == list(range(20))


def test_bucket_ids_follow_mlperf_formula() -> None:
    # max_len 50, 5 buckets: width 10; bucket = max(src // 10, tgt // 10) clamped to 4.
    lens = from_array([3, 10, 19, 49, 50, 80], tgt=[25, 1, 1, 1, 1, 1])
    assert make_policy("bucket", num_buckets=5, max_len=50).bucket_ids(lens).tolist() == [2, 1, 1, 4, 4, 4]
    # Default max_len: the longest num_tokens (80) -> width 16.
    assert make_policy("bucket", num_buckets=5).bucket_ids(lens).tolist() == [1, 0, 1, 3, 3, 4]


def test_bucket_batches_never_mix_buckets() -> None:
    rng = np.random.default_rng(0)
    lens = from_array(rng.integers(1, 100, size=500))
    pol = make_policy("bucket", batch_size=16, num_buckets=4)
    ids = pol.bucket_ids(lens)
    plan = pol.plan(lens, epochs=2, seed=3)
    counts = np.bincount(ids, minlength=4)
    assert plan.n_batches == 2 * int((counts // 16).sum())
    for b in plan.batches():
        assert len(b) == 16 and len(set(ids[b].tolist())) == 1
    assert plan.dropped.tolist() == [int((counts % 16).sum())] * 2
    keep = pol.__class__(batch_size=16, num_buckets=4, drop_last=False).plan(lens, seed=3)
    assert sorted(keep.order.tolist()) == list(range(500))


def test_token_budget_exact() -> None:
    # Sorted by length: [1, 2, 2, 3, 5, 6]; budget 8 -> [1,2,2] (3*2=6), [3] (2*5=10 > 8), ...
    lens = from_array([5, 2, 1, 6, 2, 3])
    pol = make_policy("token_budget", max_tokens=8, shuffle=False)
    assert batches(pol, lens.src) == [[2, 1, 4], [5], [0], [3]]
    sched = pol.replay(lens)
    assert (sched.padded_tokens <= 8).all()
    assert batches(make_policy("token_budget", max_tokens=100, batch_size=2, shuffle=False), lens.src) == [
        [2, 1], [4, 5], [0, 3]
    ]


def test_batch_by_size_multiple() -> None:
    # 11 samples of length 1, budget 10, multiple 4: the run of 10 is trimmed to 8.
    sizes = batch_by_size(np.ones(11, dtype=np.int64), max_tokens=10, required_batch_size_multiple=4)
    assert sizes.tolist() == [8, 3]


def test_token_budget_too_long_sample() -> None:
    lens = from_array([5, 2, 40, 3])
    with pytest.raises(InputError, match=r"Sample 2 of array has 40 tokens .* more than max_tokens=10; raise max_tokens to at least 40"):
        make_policy("token_budget", max_tokens=10).replay(lens)
    with pytest.warns(AdjustedInputWarning, match=r"Dropped 1 sample\(s\)"):
        sched = make_policy("token_budget", max_tokens=10, drop_long=True).replay(lens, epochs=2)
    assert sched.meta["dropped_per_epoch"] == [1, 1]
    assert int(sched.batch_size.sum()) == 6


def test_group_by_length_small_exact() -> None:
    lens = np.array([1, 9, 3, 7, 5, 2, 8, 4])
    pol = make_policy("group_by_length", batch_size=2, mega_batch_mult=2)
    perm = pol.permutation(8, 0, 0)
    order = pol.plan(from_array(lens), seed=0).order
    # Megabatches of 4 from the permutation, each sorted by decreasing length.
    mb = [sorted(perm[i : i + 4].tolist(), key=lambda j: -lens[j]) for i in (0, 4)]
    if lens[mb[1][0]] > lens[mb[0][0]]:
        mb[0][0], mb[1][0] = mb[1][0], mb[0][0]
    assert order.tolist() == mb[0] + mb[1]
    assert int(lens[order[0]]) == 9


def test_estimate_duration_buckets_matches_lhotse_loop() -> None:
    sizes = np.array([1, 1, 2, 3, 5, 8, 13, 21])
    # total 54, 3 buckets -> 18 each; 1+1+2+3+5+8 = 20 > 18 before 13, so 13 opens bucket 2.
    bins, tot = [], 0.0
    for size in sorted(sizes.tolist()):
        if tot > 54 / 3:
            bins.append(size)
            tot = 0.0
        tot += size
    assert estimate_duration_buckets(sizes, 3).tolist() == bins == [13]


def test_dynamic_bucket_exact_single_bucket() -> None:
    lens = from_array([4, 4, 4, 4, 4, 4, 4])
    # One bucket, max_duration 12: after 2 samples, (2+1)*4 = 12 is not > 12; after 3, 16 > 12.
    plan = make_policy("dynamic_bucket", max_duration=12, num_buckets=1).plan(lens, seed=0)
    assert sorted(len(b) for b in plan.batches()) == [1, 3, 3]
    plan = make_policy("dynamic_bucket", max_duration=12, num_buckets=1, drop_last=True).plan(lens, seed=0)
    assert sorted(len(b) for b in plan.batches()) == [3, 3] and plan.dropped.tolist() == [1]
    plan = make_policy("dynamic_bucket", max_cuts=2, num_buckets=1).plan(lens, seed=0)
    assert sorted(len(b) for b in plan.batches()) == [1, 2, 2, 2]


def test_dynamic_bucket_warns_on_long_samples() -> None:
    with pytest.warns(AdjustedInputWarning, match=r"1 sample\(s\) of array are longer than max_duration=10; each forms a batch of one"):
        sched = make_policy("dynamic_bucket", max_duration=10, num_buckets=1).replay(from_array([3, 30, 2]))
    assert int(sched.batch_size.sum()) == 3


def test_pack_rows_exact() -> None:
    # Docs 3, 5, 4 into rows of 4: [3 | 1 of doc1], [4 of doc1], [4 of doc2]
    rows = pack_rows(np.array([3, 5, 4]), 4)
    assert rows.fill.tolist() == [4, 4, 4]
    assert rows.sum_sq.tolist() == [9 + 1, 16, 16]
    assert rows.first_row.tolist() == [0, 0, 2]
    rows = pack_rows(np.array([2, 3]), 4)
    assert rows.fill.tolist() == [4, 1] and rows.sum_sq.tolist() == [4 + 4, 1]


def test_packing_schedule() -> None:
    pol = make_policy("packing", max_seq_len=4, batch_size=2, shuffle=False)
    sched = pol.replay(from_array([3, 5, 4, 1]), epochs=2)
    # Stream of 13 tokens -> rows fill [4, 4, 4, 1]; batches of 2 rows.
    assert sched.batch_size.tolist() == [2, 2] * 2
    assert sched.seq_len.tolist() == [4, 4] * 2
    assert sched.tokens.tolist() == [8, 5] * 2
    assert sched.sum_sq_len.tolist() == [10 + 16, 16 + 1] * 2
    assert sched.meta["packed"] is True and sched.is_packed
    dropped = make_policy("packing", max_seq_len=4, batch_size=2, shuffle=False, drop_last=True).replay(
        from_array([3, 5, 4, 1])
    )
    assert dropped.tokens.tolist() == [8] and dropped.meta["dropped_tokens"] == 5
    assert dropped.meta["dropped_per_epoch"] == [2]
    with pytest.warns(AdjustedInputWarning, match="ignores the target lengths"):
        pol.replay(from_array([3, 5], tgt=[1, 1]))


def test_replay_convenience_and_make_policy() -> None:
    assert replay(np.array([5, 3, 8, 2]), "sorted", batch_size=2).seq_len.tolist() == [3, 8]
    pol = make_policy("bucket", batch_size=4, num_buckets=2)
    assert isinstance(pol, POLICIES.get("bucket")) and pol.to_dict()["num_buckets"] == 2
    assert make_policy("bucket", **pol.to_dict()) == pol
    with pytest.raises(ConfigError, match=r"Unknown batching policy 'nope'. Valid names: bucket, dynamic_bucket"):
        make_policy("nope")
    with pytest.raises(ConfigError, match=r"Policy 'fixed' has no parameter 'max_tokens'. Its parameters: batch_size"):
        make_policy("fixed", max_tokens=3)
    with pytest.raises(ConfigError, match="not both"):
        replay([1, 2], make_policy("fixed"), batch_size=2)


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("fixed", {"batch_size": 0}, r"The 'batch_size' parameter of FixedPolicy must be an int >= 1 and <= 16,777,216. Got 0."),
        ("fixed", {"batch_size": 2.5}, r"'batch_size' parameter of FixedPolicy must be an int >= 1 and <= 16,777,216. Got 2.5"),
        ("fixed", {"drop_last": "yes"}, r"'drop_last' parameter of FixedPolicy must be True or False"),
        ("fixed", {"shuffle": 1}, r"'shuffle' parameter of FixedPolicy must be True or False"),
        ("fixed", {"pad_to_multiple_of": 0}, r"'pad_to_multiple_of' parameter of FixedPolicy must be an int >= 1"),
        ("sorted", {"batch_size": -1}, r"'batch_size' parameter of SortedPolicy"),
        ("sorted", {"descending": None}, r"'descending' parameter of SortedPolicy must be True or False"),
        ("sortagrad", {"sorted_epochs": -1}, r"'sorted_epochs' parameter of SortaGradPolicy must be an int >= 0"),
        ("sortagrad", {"shuffle": "all"}, r"'shuffle' parameter of SortaGradPolicy must be one of 'batches', 'samples'"),
        ("bucket", {"num_buckets": 0}, r"'num_buckets' parameter of BucketPolicy must be an int >= 1"),
        ("bucket", {"max_len": 0}, r"'max_len' parameter of BucketPolicy must be an int >= 1 and <= 2,147,483,647 or None"),
        ("token_budget", {"max_tokens": 0}, r"'max_tokens' parameter of TokenBudgetPolicy must be an int >= 1 and <= 1,099,511,627,776 or None"),
        ("token_budget", {"max_tokens": None}, r"needs 'max_tokens' and/or 'batch_size'"),
        ("token_budget", {"required_batch_size_multiple": 0}, r"'required_batch_size_multiple' parameter"),
        ("group_by_length", {"mega_batch_mult": 0}, r"'mega_batch_mult' parameter of GroupByLengthPolicy"),
        ("group_by_length", {"generator": "jax"}, r"'generator' parameter of GroupByLengthPolicy must be one of 'numpy', 'torch'"),
        ("dynamic_bucket", {}, r"needs 'max_duration' \(CLI: --max-duration\) and/or 'max_cuts'"),
        ("dynamic_bucket", {"max_duration": -5}, r"'max_duration' parameter of DynamicBucketPolicy must be a number > 0"),
        ("dynamic_bucket", {"max_duration": float("nan")}, r"'max_duration' parameter .* must be a number > 0"),
        ("dynamic_bucket", {"max_cuts": 0, "max_duration": 5}, r"'max_cuts' parameter of DynamicBucketPolicy"),
        ("packing", {"max_seq_len": 0}, r"'max_seq_len' parameter of PackingPolicy must be an int >= 1"),
    ],
)
def test_parameter_validation(name: str, params: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        make_policy(name, **params)


def test_replay_run_validation() -> None:
    pol = make_policy("fixed", batch_size=2)
    with pytest.raises(ConfigError, match=r"The 'epochs' parameter must be an int >= 1 and <= 10,000. Got 0."):
        pol.replay([1, 2], epochs=0)
    with pytest.raises(ConfigError, match=r"The 'seed' parameter must be an int >= 0 and <= 9,223,372,036,854,775,807. Got -1."):
        pol.replay([1, 2], seed=-1)
    with pytest.raises(InputError, match="every sample was dropped"):
        make_policy("fixed", batch_size=4, drop_last=True).replay([1, 2])
    with pytest.raises(InputError, match="holds no samples"):
        pol.replay([])
    with pytest.raises(InputError, match="num_buckets=5 exceeds the 3 samples"):
        make_policy("dynamic_bucket", max_duration=10, num_buckets=5).replay([1, 2, 3])
