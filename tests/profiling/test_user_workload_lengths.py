"""The harness passes each SeqPoint's real lengths to a workload that takes them, and the
cache keys them; signature-only workloads and their keys are unchanged."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from seqpoint.cache import MeasurementCache
from seqpoint.profiling import ProfileConfig, profile_points
from seqpoint.selection import SeqPoint, SeqPoints
from seqpoint.workloads import load_workload

ROOT = Path(__file__).resolve().parents[2]
CFG = ProfileConfig(warmup=0, repeats=1)


def _points(lengths_a, lengths_b):
    pts = (SeqPoint(iteration=0, batch_size=2, seq_len=12, weight=1.0, lengths=lengths_a),
           SeqPoint(iteration=5, batch_size=2, seq_len=12, weight=1.0, lengths=lengths_b))
    return SeqPoints(method="seqpoint", n_iterations=2, points=pts)


class _Spy:
    """Records what make_batch received (wraps the real workload)."""

    def __init__(self, workload):
        self.inner, self.seen = workload, []
        self.name, self.config = workload.name, workload.config
        self.takes_batch_shape = getattr(workload, "takes_batch_shape", False)

    def make_batch(self, shape):
        # Tuples other than the points' signature are the harness' start-up decoy.
        if not isinstance(shape, tuple) or shape[:2] == (2, 12):
            self.seen.append(shape)
        return self.inner.make_batch(shape)

    def step(self, batch):
        return self.inner.step(batch)


def test_real_lengths_reach_make_batch_and_key_the_cache(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    spy = _Spy(load_workload("examples/ctc_workload.py:CTCModel", {"hidden": "8"}))
    cache = MeasurementCache(tmp_path / "c.sqlite")
    ms = profile_points(spy, _points((12, 3), (12, 7)), CFG, cache=cache, progress=False)
    # One signature, two batches: measured twice, each with its own lengths.
    assert [s.lengths.tolist() for s in spy.seen] == [[12, 3], [12, 7]]
    assert all(s.exact for s in spy.seen) and all(m.ok for m in ms.measurements)
    assert len(cache) == 2
    spy.seen.clear()
    profile_points(spy, _points((12, 3), (12, 3)), CFG, cache=cache, progress=False)
    assert spy.seen == []  # both from the cache: same signature and the same lengths


def test_signature_only_workloads_get_signatures_and_the_same_keys(tmp_path):
    spy = _Spy(load_workload("deepspeech2:tiny"))
    cache = MeasurementCache(tmp_path / "c.sqlite")
    profile_points(spy, _points((12, 3), (12, 7)), CFG, cache=cache, progress=False)
    assert spy.seen == [(2, 12, 0)]  # lengths ignored: one signature, one measurement
    key = MeasurementCache.key("w", {}, {}, (2, 12, 0), {})
    assert key == MeasurementCache.key("w", {}, {}, (2, 12, 0), {}, lengths=None)
    assert key != MeasurementCache.key("w", {}, {}, (2, 12, 0), {}, lengths="ab")


def test_points_without_lengths_run_full_rows(monkeypatch):
    monkeypatch.chdir(ROOT)
    spy = _Spy(load_workload("examples/ctc_workload.py:CTCModel", {"hidden": "8"}))
    pts = _points(None, None)
    ms = profile_points(spy, pts, CFG, progress=False)
    assert len(spy.seen) == 1 and tuple(spy.seen[0]) == (2, 12, 0)
    assert np.isfinite(ms.measurements[0].metrics["time_s"])
    assert dataclasses.replace(pts.points[0]).lengths is None
