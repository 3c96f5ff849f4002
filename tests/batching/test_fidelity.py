"""Each policy against the library it imitates.

- fairseq (not installable on Python 3.11): its Cython ``batch_by_size_vec`` loop,
  ``LanguagePairDataset.ordered_indices`` and ``shuffle_batches`` are ported below and
  compared index for index.
- Hugging Face ``LengthGroupedSampler``: compared directly with transformers when it is
  installed (same torch generator), and always with a port of
  ``get_length_grouped_indices``.
- lhotse ``DynamicBucketingSampler``: its ``TimeConstraint`` + ``DurationBatcher`` loop and
  ``estimate_duration_buckets`` are ported; batch composition per bucket must match.
- MLPerf GNMT ``BucketingSampler``: bucket ids from its torch code, one bucket per batch,
  per-bucket remainders dropped.
- DeepSpeech2 / deepspeech.pytorch SortaGrad: epoch 0 is the length-sorted sequence, later
  epochs permute the same bins.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqpoint.batching import (
    batch_by_size,
    epoch_rng,
    estimate_duration_buckets,
    group_by_bucket,
    length_grouped_indices,
    make_policy,
)
from seqpoint.traces import from_array


# ------------------------------------------------------------------ fairseq
def fairseq_batch_by_size_vec(indices, num_tokens_vec, max_tokens, max_sentences, bsz_mult):  # type: ignore[no-untyped-def]
    """Line-by-line port of fairseq/data/data_utils_fast.pyx::batch_by_size_vec."""
    if indices.shape[0] == 0:
        return []
    assert max_tokens <= 0 or np.max(num_tokens_vec) <= max_tokens
    indices_len = indices.shape[0]
    batches_ends = np.zeros(indices_len, dtype=np.int32)
    batches_count = 0
    batch_start = 0
    tail_max_tokens = 0
    batch_max_tokens = 0
    for pos in range(indices_len):
        tail_max_tokens = max(tail_max_tokens, num_tokens_vec[pos])
        new_batch_end = pos + 1
        new_batch_max_tokens = max(batch_max_tokens, tail_max_tokens)
        new_batch_sentences = new_batch_end - batch_start
        new_batch_num_tokens = new_batch_sentences * new_batch_max_tokens
        overflow = new_batch_sentences > max_sentences > 0 or new_batch_num_tokens > max_tokens > 0
        size_matches_with_bsz_mult = (
            new_batch_sentences < bsz_mult or new_batch_sentences % bsz_mult == 0
        )
        if overflow:
            tail_num_tokens = tail_max_tokens * (new_batch_end - batches_ends[batches_count])
            tail_overflow = tail_num_tokens > max_tokens > 0
            if tail_overflow:
                batches_count += 1
                batches_ends[batches_count] = pos
                tail_max_tokens = num_tokens_vec[pos]
            batch_start = batches_ends[batches_count]
            batches_count += 1
            new_batch_max_tokens = tail_max_tokens
        if overflow or size_matches_with_bsz_mult:
            batches_ends[batches_count] = new_batch_end
            batch_max_tokens = new_batch_max_tokens
            tail_max_tokens = 0
    if batches_ends[batches_count] != indices_len:
        batches_count += 1
    return np.split(indices, batches_ends[:batches_count])


@contextlib.contextmanager
def numpy_seed(seed: int) -> Iterator[None]:
    """fairseq.data.data_utils.numpy_seed: seeds numpy's global RNG, restores it after."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def fairseq_epoch_batches(src, tgt, max_tokens, max_sentences, bsz_mult, seed, epoch):  # type: ignore[no-untyped-def]
    with numpy_seed(seed):  # TranslationTask.get_batch_iterator
        indices = np.random.permutation(len(src)).astype(np.int64)  # ordered_indices, shuffle=True
        if tgt is not None:
            indices = indices[np.argsort(tgt[indices], kind="mergesort")]
        indices = indices[np.argsort(src[indices], kind="mergesort")]
    num_tokens = src[indices] if tgt is None else np.maximum(src, tgt)[indices]
    batches = fairseq_batch_by_size_vec(indices, num_tokens, max_tokens, max_sentences, bsz_mult)
    batches = list(batches)
    with numpy_seed(seed + epoch):  # EpochBatchIterator: shuffle_batches(batches, seed + epoch)
        np.random.shuffle(batches)
    return [b.tolist() for b in batches]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 12), min_size=1, max_size=40),
    st.integers(12, 60),
    st.integers(0, 12),
    st.integers(1, 9),
)
def test_batch_by_size_matches_fairseq_vec(tokens, max_tokens, max_sentences, bsz_mult) -> None:  # type: ignore[no-untyped-def]
    vec = np.asarray(tokens, dtype=np.int64)
    ref = fairseq_batch_by_size_vec(np.arange(len(vec)), vec, max_tokens, max_sentences, bsz_mult)
    ours = batch_by_size(
        vec,
        max_tokens=max_tokens,
        max_sentences=max_sentences or None,
        required_batch_size_multiple=bsz_mult,
    )
    assert ours.tolist() == [len(b) for b in ref]


def test_token_budget_reproduces_fairseq_pipeline() -> None:
    rng = np.random.default_rng(7)
    src = rng.integers(1, 60, size=700)
    tgt = rng.integers(1, 60, size=700)
    pol = make_policy("token_budget", max_tokens=600, batch_size=40, required_batch_size_multiple=8)
    plan = pol.plan(from_array(src, tgt), epochs=3, seed=5)
    for e in range(3):
        ours = [b.tolist() for b, ep in zip(plan.batches(), plan.epoch, strict=True) if ep == e]
        # fairseq epochs are 1-based.
        assert ours == fairseq_epoch_batches(src, tgt, 600, 40, 8, seed=5, epoch=e + 1)


# ------------------------------------------------------------------ Hugging Face
def hf_get_length_grouped_indices(lengths, batch_size, perm, mega_batch_mult=None):  # type: ignore[no-untyped-def]
    """transformers.trainer_pt_utils.get_length_grouped_indices with the permutation given."""
    if mega_batch_mult is None:
        mega_batch_mult = min(len(lengths) // (batch_size * 4), 50)
        if mega_batch_mult == 0:
            mega_batch_mult = 1
    indices = list(perm)
    megabatch_size = mega_batch_mult * batch_size
    megabatches = [indices[i : i + megabatch_size] for i in range(0, len(lengths), megabatch_size)]
    megabatches = [sorted(m, key=lambda i: lengths[i], reverse=True) for m in megabatches]
    megabatch_maximums = [lengths[m[0]] for m in megabatches]
    max_idx = int(np.argmax(megabatch_maximums))
    megabatches[0][0], megabatches[max_idx][0] = megabatches[max_idx][0], megabatches[0][0]
    return [i for m in megabatches for i in m]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 20), min_size=1, max_size=120),
    st.integers(1, 9),
    st.one_of(st.none(), st.integers(1, 4)),
    st.integers(0, 2**31),
)
def test_group_by_length_matches_hf_algorithm(lengths, batch_size, mult, seed) -> None:  # type: ignore[no-untyped-def]
    arr = np.asarray(lengths, dtype=np.int64)
    perm = np.random.default_rng(seed).permutation(len(arr))
    ours = length_grouped_indices(arr, perm, batch_size, mult)
    assert ours.tolist() == hf_get_length_grouped_indices(lengths, batch_size, perm.tolist(), mult)


def test_group_by_length_equals_transformers_sampler() -> None:
    torch = pytest.importorskip("torch")
    tpu = pytest.importorskip("transformers.trainer_pt_utils")
    torch.set_num_threads(1)
    lengths = np.random.default_rng(0).integers(1, 500, size=3000)
    pol = make_policy("group_by_length", batch_size=16, generator="torch")
    plan = pol.plan(from_array(lengths), epochs=2, seed=11)
    for e in range(2):
        g = torch.Generator()
        # the epoch's torch seed: 63 bits of the stream epoch_rng(11, e) draws from
        g.manual_seed(int(np.random.SeedSequence([11, e]).generate_state(1, np.uint64)[0] >> np.uint64(1)))
        sampler = tpu.LengthGroupedSampler(16, lengths=lengths.tolist(), generator=g)
        assert plan.order[plan.epoch.repeat(np.diff(plan.offsets)) == e].tolist() == list(sampler)


# ------------------------------------------------------------------ lhotse
class TimeConstraint:
    """lhotse.dataset.sampling.base.TimeConstraint (duration and max_cuts parts)."""

    def __init__(self, max_duration, max_cuts):  # type: ignore[no-untyped-def]
        self.max_duration, self.max_cuts = max_duration, max_cuts
        self.num_cuts, self.longest_seen = 0, 0

    def add(self, duration):  # type: ignore[no-untyped-def]
        self.longest_seen = max(self.longest_seen, duration)
        self.num_cuts += 1

    def close_to_exceeding(self):  # type: ignore[no-untyped-def]
        if self.max_cuts is not None and self.num_cuts >= self.max_cuts:
            return True
        if self.max_duration is not None:
            return (self.num_cuts + 1) * self.longest_seen > self.max_duration
        return False


def lhotse_bucket_batches(durations, max_duration, max_cuts, drop_last):  # type: ignore[no-untyped-def]
    """DurationBatcher over one bucket's FIFO queue, as DynamicBucketer drains it."""
    out, i = [], 0
    while i < len(durations):
        c = TimeConstraint(max_duration, max_cuts)
        batch = []
        while i < len(durations):
            batch.append(i)
            c.add(durations[i])
            i += 1
            if c.close_to_exceeding():
                break
        else:
            if drop_last and not c.close_to_exceeding():
                break
        out.append(batch)
    return out


@pytest.mark.parametrize(("max_duration", "max_cuts", "drop_last"), [(3000, None, False), (2500, 7, True), (None, 5, False)])
def test_dynamic_bucket_matches_lhotse_batching(max_duration, max_cuts, drop_last) -> None:  # type: ignore[no-untyped-def]
    dur = np.random.default_rng(1).integers(100, 1700, size=2000)
    pol = make_policy("dynamic_bucket", max_duration=max_duration, max_cuts=max_cuts, num_buckets=6, drop_last=drop_last)
    plan = pol.plan(from_array(dur), epochs=2, seed=4)
    bins = estimate_duration_buckets(dur, 6)
    # lhotse's estimate_duration_buckets loop.
    ref_bins, tot = [], 0.0
    for size in sorted(dur.tolist()):
        if tot > dur.sum() / 6:
            ref_bins.append(size)
            tot = 0.0
        tot += size
    assert bins.tolist() == ref_bins
    bucket = np.searchsorted(bins, dur, side="right")
    for e in range(2):
        order, b_sorted = group_by_bucket(epoch_rng(4, e), bucket)
        expected = Counter()
        for b in np.unique(b_sorted):
            queue = order[b_sorted == b]
            for batch in lhotse_bucket_batches(dur[queue].tolist(), max_duration, max_cuts, drop_last):
                expected[tuple(queue[batch].tolist())] += 1
        ours = Counter(
            tuple(x.tolist()) for x, ep in zip(plan.batches(), plan.epoch, strict=True) if ep == e
        )
        assert ours == expected


# ------------------------------------------------------------------ MLPerf GNMT
def test_bucket_ids_match_mlperf_torch_code() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    src, tgt = rng.integers(1, 80, size=1000), rng.integers(1, 80, size=1000)
    num_buckets, max_len = 5, 50  # MLPerf GNMT filters to max_len 50; longer ones are clamped here
    # mlperf/training rnn_translator seq2seq/data/sampler.py BucketingSampler.__init__
    bucket_width = (max_len + num_buckets - 1) // num_buckets
    ids = torch.max(torch.tensor(src) // bucket_width, torch.tensor(tgt) // bucket_width)
    ids.clamp_(0, num_buckets - 1)
    ours = make_policy("bucket", num_buckets=num_buckets, max_len=max_len).bucket_ids(from_array(src, tgt))
    assert ours.tolist() == ids.tolist()


# ------------------------------------------------------------------ DeepSpeech2
def test_sortagrad_matches_deepspeech_pytorch_bins() -> None:
    lens = np.random.default_rng(3).integers(100, 2000, size=103)
    plan = make_policy("sortagrad", batch_size=10).plan(from_array(lens), epochs=4, seed=0)
    # deepspeech.pytorch: manifest sorted by duration, bins of batch_size consecutive ids.
    ids = np.argsort(lens, kind="stable").tolist()
    bins = [ids[i : i + 10] for i in range(0, len(ids), 10)]
    got = [b.tolist() for b in plan.batches()]
    n = len(bins)
    assert got[:n] == bins  # epoch 0: increasing length
    for e in range(1, 4):
        assert sorted(got[e * n : (e + 1) * n]) == sorted(bins)  # later: a permutation of the bins
