import json

import pytest

from seqpoint.exceptions import SeqPointWarning
from seqpoint.workflows import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    SelectionSection,
    WorkloadSection,
    run,
)


@pytest.fixture
def oom_config(tmp_path, tiny_config):
    """``oom_config(limit)``: a run whose workload runs out of memory past ``limit`` tokens (no
    in-sequence window unless ``cold_window`` says)."""
    def make(limit, cold_window=0):
        return tiny_config(
            tmp_path, name="oom", lengths=LengthsSection(source="bundled:librispeech-dev-clean", max_samples=200),
            batching=BatchingSection(policy="sortagrad", epochs=1, params={"batch_size": 20}),
            selection=SelectionSection(n_points=4),
            workload=WorkloadSection(name="_oom_workload:build", set={"limit": str(limit)}),
            profile=ProfileSection(warmup=1, repeats=2, metrics=("time",), cache=str(tmp_path / "c.sqlite"),
                                   cold_window=cold_window))
    return make


def _limit_below_longest(oom_config):
    lens = sorted(p.seq_len for p in run(oom_config(10**9)).seqpoints.points)
    return lens[-2]  # every point but the longest fits


def test_oom_at_longest_point_is_recorded_and_projection_marked_incomplete(tmp_path, oom_config):
    limit = _limit_below_longest(oom_config)
    with pytest.warns(SeqPointWarning, match="No in-sequence window.*out of memory"):  # a window step too
        res = run(oom_config(limit, cold_window=None))
    longest = max(res.seqpoints.points, key=lambda p: p.seq_len)
    assert longest.seq_len > limit
    assert res.measurements.window is None
    statuses = {m.seq_len: m.status for m in res.measurements.measurements}
    assert statuses[longest.seq_len] == "oom"
    assert sum(s == "ok" for s in statuses.values()) == len(res.seqpoints) - 1
    assert not res.projection.complete
    assert res.projection.failed == (longest.iteration,)
    assert res.projection.totals["time_s"] > 0  # projected from the points that ran
    saved = json.loads((tmp_path / "run" / "measurements.json").read_text())
    assert [m["status"] for m in saved["measurements"]].count("oom") == 1
    assert "INCOMPLETE" in (tmp_path / "run" / "report.html").read_text()


def test_rerun_measures_only_what_failed(oom_config):
    limit = _limit_below_longest(oom_config)
    first = run(oom_config(limit))
    ok_before = {m.seq_len: m.metrics for m in first.measurements.measurements if m.ok}
    assert len(ok_before) == len(first.seqpoints) - 1
    again = run(oom_config(limit))
    for m in again.measurements.measurements:
        if m.ok:
            assert m.metrics == ok_before[m.seq_len]  # from the cache, not measured again
