import random

import numpy as np
import pytest

lhotse = pytest.importorskip("lhotse")

from lhotse import AudioSource, CutSet, MonoCut, Recording  # noqa: E402
from lhotse.dataset import BucketingSampler, DynamicBucketingSampler, SimpleCutSampler  # noqa: E402
from lhotse.utils import compute_num_frames  # noqa: E402

from seqpoint.exceptions import InputError  # noqa: E402
from seqpoint.integrations.lhotse import schedule_from_sampler  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _cuts(n=300, seed=0):
    rng = random.Random(seed)

    def cut(i):
        d = round(rng.uniform(1.0, 16.0), 3)
        rec = Recording(id=f"r{i}", sources=[AudioSource(type="file", channels=[0], source="/nowhere.wav")],
                        sampling_rate=16000, num_samples=int(d * 16000), duration=d)
        return MonoCut(id=f"c{i}", start=0, duration=d, channel=0, recording=rec)

    return CutSet.from_cuts([cut(i) for i in range(n)])


def _expected(sampler, epochs=1, frame_shift=0.01):
    rows = []
    for e in range(epochs):
        sampler.set_epoch(e)
        for batch in sampler:
            f = np.array([compute_num_frames(c.duration, frame_shift, c.sampling_rate) for c in batch])
            rows.append((e, len(f), f.max(), f.sum(), (f * f).sum()))
    return np.array(rows)


def _columns(s):
    return np.stack([s.epoch, s.batch_size, s.seq_len, s.tokens, s.sum_sq_len], axis=1)


@pytest.mark.parametrize("world_size,rank", [(None, None), (2, 0), (2, 1)])
def test_dynamic_bucketing_matches_the_real_sampler(world_size, rank):
    def make():
        return DynamicBucketingSampler(_cuts(), max_duration=80.0, num_buckets=4, shuffle=True,
                                       seed=3, world_size=world_size, rank=rank)

    sampler = make()
    s = schedule_from_sampler(sampler, epochs=2)
    np.testing.assert_array_equal(_columns(s), _expected(make(), epochs=2))
    assert sampler.epoch == 0  # the user's sampler is untouched
    assert s.meta["world_size"] == (world_size or 1)
    assert np.all(s.tgt_len == 0)


def test_simple_cut_sampler_matches_the_real_sampler():
    def make():
        return SimpleCutSampler(_cuts(), max_duration=50.0, shuffle=True, seed=1)

    s = schedule_from_sampler(make(), epochs=2, frame_shift=0.02)
    np.testing.assert_array_equal(_columns(s), _expected(make(), epochs=2, frame_shift=0.02))


def test_bucketing_sampler_matches_the_real_sampler():
    def make():
        return BucketingSampler(_cuts(), num_buckets=3, max_duration=60.0, shuffle=True, seed=2)

    s = schedule_from_sampler(make())
    np.testing.assert_array_equal(_columns(s), _expected(make()))


def test_cuts_without_duration_get_one_clear_error():
    cuts = CutSet.from_cuts([MonoCut(id=f"x{i}", start=0, duration=None, channel=0) for i in range(4)])
    # lhotse's own constructors sum or sort durations, except bucketing with explicit bins.
    for sampler in (DynamicBucketingSampler(cuts, max_duration=10, duration_bins=[5.0]),):
        with pytest.raises(InputError, match="cut 'x0' has no positive duration .*record a real run"):
            schedule_from_sampler(sampler)


def test_cuts_without_sampling_rate_need_one():
    cuts = CutSet.from_cuts([MonoCut(id=f"y{i}", start=0, duration=2.0, channel=0) for i in range(4)])
    with pytest.raises(InputError, match="pass sampling_rate=HZ"):
        schedule_from_sampler(SimpleCutSampler(cuts, max_duration=10))
    s = schedule_from_sampler(SimpleCutSampler(cuts, max_duration=10), sampling_rate=16000)
    np.testing.assert_array_equal(s.seq_len, [200])
