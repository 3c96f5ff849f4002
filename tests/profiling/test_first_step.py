import pytest

pytest.importorskip("torch")

from seqpoint.profiling import (
    ProfileConfig,
    Profiler,
    campaign_decoy,
    profile_points,
    startup_state,
)
from seqpoint.workloads import load_workload


def test_first_step_of_new_shape_recorded_once(capfd):
    profiler = Profiler(load_workload("deepspeech2:tiny", overrides={"threads": 1}))
    cfg = ProfileConfig(warmup=1, repeats=2, metrics=("time", "breakdown"))
    first = profiler.measure([(2, 40, 0), (2, 56, 0)], cfg)
    assert all("time_s_first" in m.metrics for m in first.measurements)
    assert all(m.metrics["time_s_first"] > 0 for m in first.measurements)
    again = profiler.measure([(2, 40, 0)], cfg)
    # the shape was already run in this process: its first step is not cold any more
    assert "time_s_first" not in again.measurements[0].metrics
    # kineto's start/stop lines are kept off stderr
    assert "USDT" not in capfd.readouterr().err


def test_no_first_step_without_warmup():
    w = load_workload("deepspeech2:tiny", overrides={"threads": 1})
    ms = profile_points(w, [(2, 48, 0)], ProfileConfig(warmup=0, repeats=1), progress=False)
    assert "time_s_first" not in ms.measurements[0].metrics


def test_campaign_decoy_is_just_below_the_largest_point_and_none_of_them():
    assert campaign_decoy([(2, 40, 0), (8, 30, 0), (4, 50, 0)]) == (8, 29, 0)
    # taken one token shorter: one longer instead
    assert campaign_decoy([(8, 30, 0), (8, 29, 0)]) == (8, 31, 0)
    # seq2seq: target length counts toward the size and is kept
    assert campaign_decoy([(4, 10, 40), (4, 20, 20), (4, 30, 5)]) == (4, 9, 40)
    # packed signatures: the decoy is a plain tensor shape
    assert campaign_decoy([(8, 512, 0, 90000)]) == (8, 511, 0)
    assert campaign_decoy([]) is None


class _Counting:
    """A stand-in workload that records the shapes it steps."""

    warmup_signature = (1, 3, 0)

    def __init__(self):
        self.stepped = []

    def make_batch(self, signature):
        return tuple(signature)

    def step(self, batch):
        self.stepped.append(batch)


def test_start_up_runs_on_the_campaign_decoy_before_the_first_point():
    w = _Counting()
    profile_points(w, [(2, 40, 0), (4, 60, 0)], ProfileConfig(warmup=1, repeats=1), progress=False)
    assert w.stepped[:3] == [(4, 59, 0)] * 3  # start-up: campaign-sized, not (1, 3, 0)
    assert (1, 3, 0) not in w.stepped
    assert w.stepped[3] == (4, 47, 0)  # one step, 20% shorter, counts oneDNN primitives
    assert w.stepped[4] == (2, 40, 0)


def test_start_up_waits_for_a_point_that_is_measured():
    w = _Counting()
    profiler = Profiler(w)
    profiler.measure([], ProfileConfig(warmup=1, repeats=1))
    assert w.stepped == []
    startup_state(w, profiler.state, (2, 5, 0))
    assert w.stepped == [(2, 5, 0)] * 3 + [(2, 4, 0)]
    startup_state(w, profiler.state, (2, 7, 0))  # once per profiler
    assert len(w.stepped) == 4


def test_what_a_workload_ran_belongs_to_its_profiler():
    w, cfg = _Counting(), ProfileConfig(warmup=1, repeats=1)
    one = Profiler(w)
    first = one.measure([(2, 40, 0)], cfg).measurements[0]
    again = one.measure([(2, 40, 0)], cfg).measurements[0]
    # one profiler: the start-up ran once, and the shape it stepped is warm the second time
    assert w.stepped.count((2, 39, 0)) == 3 and "time_s_first" in first.metrics
    assert "time_s_first" not in again.metrics
    # another profiler of the same object knows nothing of it: start-up again, the shape cold
    other = Profiler(w).measure([(2, 40, 0)], cfg).measurements[0]
    assert w.stepped.count((2, 39, 0)) == 6 and "time_s_first" in other.metrics
    # nothing was written onto the workload
    assert set(vars(w)) == {"stepped"}


def test_a_seen_shape_has_no_cold_first_step():
    w = _Counting()
    profiler = Profiler(w)
    startup_state(w, profiler.state).seen.add((2, 40, 0))
    ms = profiler.measure([(2, 40, 0), (2, 48, 0)], ProfileConfig(warmup=1, repeats=1))
    assert "time_s_first" not in ms.measurements[0].metrics
    assert "time_s_first" in ms.measurements[1].metrics


def test_onednn_primitives_are_counted_for_the_cache_model():
    import torch

    if not torch.backends.mkldnn.is_available():
        pytest.skip("torch without oneDNN")
    w = load_workload("deepspeech2:tiny", overrides={"threads": 1})
    # shapes no other test uses: oneDNN's cache is per process, shared by every workload
    ms = profile_points(w, [(3, 97, 0), (3, 131, 0)], ProfileConfig(warmup=1, repeats=1), progress=False)
    m = ms.measurements[0].metrics
    # convolutions and LSTMs create primitives per shape; weight reorders are shared
    assert m["onednn_primitives_new"] >= 2 and m["onednn_primitives_shared"] >= 1
    assert m["onednn_cache_capacity"] == 1024
