import random

import numpy as np
import pytest

lhotse = pytest.importorskip("lhotse")

from lhotse import AudioSource, CutSet, MonoCut, Recording, SupervisionSegment  # noqa: E402
from lhotse.dataset import (  # noqa: E402
    BucketingSampler,
    CutPairsSampler,
    DynamicBucketingSampler,
    SimpleCutSampler,
)
from lhotse.utils import compute_num_frames  # noqa: E402

from seqpoint.exceptions import AssumedInputWarning, ConfigError, InputError  # noqa: E402
from seqpoint.integrations.lhotse import schedule_from_sampler  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _cut(i, d, text=None):
    rec = Recording(id=f"r{i}", sources=[AudioSource(type="file", channels=[0], source="/nowhere.wav")],
                    sampling_rate=16000, num_samples=int(d * 16000), duration=d)
    sups = [] if text is None else [SupervisionSegment(id=f"s{i}", recording_id=f"r{i}", start=0, duration=d, text=text)]
    return MonoCut(id=f"c{i}", start=0, duration=d, channel=0, recording=rec, supervisions=sups)


def _cuts(n=300, seed=0):
    rng = random.Random(seed)
    return CutSet.from_cuts([_cut(i, round(rng.uniform(1.0, 16.0), 3)) for i in range(n)])


def _expected(sampler, epochs=1, frame_shift=0.01):
    rows, frames = [], []
    for e in range(epochs):
        sampler.set_epoch(e)
        for batch in sampler:
            f = np.array([compute_num_frames(c.duration, frame_shift, c.sampling_rate) for c in batch])
            rows.append((e, len(f), f.max(), f.sum(), (f * f).sum()))
            frames.append(f)
    return np.array(rows), frames


def _rows_equal(s, frames):
    for i, f in enumerate(frames):
        np.testing.assert_array_equal(s.rows.row(i)[0], f)


def _columns(s):
    return np.stack([s.epoch, s.batch_size, s.seq_len, s.tokens, s.sum_sq_len], axis=1)


@pytest.mark.parametrize("world_size,rank", [(None, None), (2, 0), (2, 1)])
def test_dynamic_bucketing_matches_the_real_sampler(world_size, rank):
    def make():
        return DynamicBucketingSampler(_cuts(), max_duration=80.0, num_buckets=4, shuffle=True,
                                       seed=3, world_size=world_size, rank=rank)

    sampler = make()
    s = schedule_from_sampler(sampler, epochs=2)
    rows, frames = _expected(make(), epochs=2)
    np.testing.assert_array_equal(_columns(s), rows)
    _rows_equal(s, frames)  # every cut's frames, as the user's build_batch gets them
    assert sampler.epoch == 0  # the user's sampler is untouched
    assert s.meta["world_size"] == (world_size or 1)
    assert np.all(s.tgt_len == 0)


def test_simple_cut_sampler_matches_the_real_sampler():
    def make():
        return SimpleCutSampler(_cuts(), max_duration=50.0, shuffle=True, seed=1)

    s = schedule_from_sampler(make(), epochs=2, frame_shift=0.02)
    rows, frames = _expected(make(), epochs=2, frame_shift=0.02)
    np.testing.assert_array_equal(_columns(s), rows)
    _rows_equal(s, frames)


def test_bucketing_sampler_matches_the_real_sampler():
    def make():
        return BucketingSampler(_cuts(), num_buckets=3, max_duration=60.0, shuffle=True, seed=2)

    s = schedule_from_sampler(make())
    rows, frames = _expected(make())
    np.testing.assert_array_equal(_columns(s), rows)
    _rows_equal(s, frames)


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


def test_frames_round_as_lhotse_or_as_asked():
    # 1.0049 s at 16 kHz: 16,078 samples, 100.49 hops of 160
    cuts = CutSet.from_cuts([_cut(0, 1.0049), _cut(1, 2.0)])
    got = {r: schedule_from_sampler(SimpleCutSampler(cuts, max_cuts=2), rounding=r).rows.row(0)[0].tolist()
           for r in ("round", "ceil", "floor")}
    assert got == {"round": [100, 200], "ceil": [101, 200], "floor": [100, 200]}
    with pytest.raises(ConfigError, match="'rounding' parameter of schedule_from_sampler must be one of 'round'"):
        schedule_from_sampler(SimpleCutSampler(cuts, max_cuts=2), rounding="up")


def test_targets_come_from_target_fn_or_a_pair_sampler_else_a_warning_says_they_are_zero():
    from seqpoint.selection import make_selector

    cuts = CutSet.from_cuts([_cut(i, 1.0 + i, text=" ".join(["w"] * (3 + i))) for i in range(4)])
    with pytest.warns(AssumedInputWarning, match="cuts carry transcripts, but without target_fn every target counts as 0"):
        plain = schedule_from_sampler(SimpleCutSampler(cuts, max_cuts=2))
    assert plain.rows.tgt_lengths is None and not plain.tgt_len.any()
    s = schedule_from_sampler(SimpleCutSampler(cuts, max_cuts=2), target_fn=lambda c: len(c.supervisions[0].text.split()))
    assert s.tgt_len.tolist() == [4, 6] and s.rows.tgt_lengths.tolist() == [3, 4, 5, 6]
    assert s.tokens.tolist() == [100 + 200 + 3 + 4, 300 + 400 + 5 + 6]
    points = make_selector("seqpoint", n_points=2).fit(s).to_seqpoints(s)
    assert {tuple(p.tgt_lengths) for p in points.points} == {(3, 4), (5, 6)}  # what build_batch gets

    halves = CutSet.from_cuts([_cut(i, 0.5 + i / 2) for i in range(4)])  # the same ids, half as long
    pairs = schedule_from_sampler(CutPairsSampler(cuts, halves, max_cuts=2))
    assert pairs.rows.tgt_lengths.tolist() == [50, 100, 150, 200] and pairs.tgt_len.tolist() == [100, 200]


def test_a_recorded_run_the_replay_disagrees_with_is_refused_before_profiling(tmp_path):
    """lhotse rounds frames; a job whose features count them with ceil records one more: the
    one-call answer says so before any step is profiled, and how to make them agree."""
    import math

    from seqpoint.integrations import Shape, record
    from seqpoint.testing import toy_measurements, toy_points
    from seqpoint.workflows import project_job, validate_trace

    cuts = CutSet.from_cuts([_cut(i, d) for i, d in enumerate([2.0, 1.5, 1.0049, 0.5])])
    with record(tmp_path / "run.csv", shape_fn=lambda f: Shape(len(f), max(f), lengths=f)) as rec:
        for batch in SimpleCutSampler(cuts, max_cuts=2):
            with rec.step([math.ceil(round(c.duration * 16000) / 160) for c in batch]):
                pass

    class Step:
        name, config, steps = "counting", {}, 0

        def make_batch(self, signature):
            return signature

        def step(self, batch):
            self.steps += 1
            return 0.0

    step = Step()
    replay = schedule_from_sampler(SimpleCutSampler(cuts, max_cuts=2))
    with pytest.raises(InputError, match=r"Trace 1 of 1 is not a run of this schedule: micro-batch 1 has seq_len 101, "
                                         r"the schedule 100; the schedule is a lhotse replay: replay with "
                                         r"schedule_from_sampler\(\.\.\., rounding='ceil' or 'floor'\)"):
        project_job(replay, step, traces=[tmp_path / "run.csv"], n_points=2)
    assert step.steps == 0
    ceil = schedule_from_sampler(SimpleCutSampler(cuts, max_cuts=2), rounding="ceil")
    points = toy_points(ceil, [0])
    checked = validate_trace(ceil, points, toy_measurements(points), tmp_path / "run.csv")  # they agree
    assert checked.n_steps == len(ceil)
