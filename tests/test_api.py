"""The top-level namespace and seqpoint.testing: what a Python user imports first."""

from __future__ import annotations

import subprocess
import sys

import pytest

import seqpoint
from seqpoint.testing import (
    ToyConfig,
    ToyWorkload,
    linear_cost,
    toy_measurements,
    toy_points,
    toy_schedule,
    varied_schedule,
)


def test_entry_points_are_the_stages_own_functions() -> None:
    from seqpoint.batching import replay
    from seqpoint.profiling import profile_points
    from seqpoint.projection import project
    from seqpoint.selection import make_selector
    from seqpoint.traces import read_lengths
    from seqpoint.workflows import project_job

    assert (seqpoint.read_lengths, seqpoint.replay, seqpoint.make_selector, seqpoint.profile_points,
            seqpoint.project, seqpoint.project_job) == (read_lengths, replay, make_selector, profile_points,
                                                        project, project_job)
    assert issubclass(seqpoint.ConfigError, seqpoint.SeqPointError) and issubclass(seqpoint.SeqPointError, ValueError)
    assert set(seqpoint.__all__) <= set(dir(seqpoint))
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        seqpoint.nope  # noqa: B018


def test_import_seqpoint_loads_no_stage() -> None:
    code = "import sys, seqpoint; print(sorted(m.split('.')[1] for m in sys.modules if m.startswith('seqpoint.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['_live', '_version', 'exceptions']"  # foundation modules, no stage


def test_the_four_stages_on_toy_inputs() -> None:
    schedule = seqpoint.replay([5, 3, 8, 2, 7, 4], "sorted", batch_size=2)
    points = seqpoint.make_selector("seqpoint", n_points=2, cost="tokens").fit(schedule).to_seqpoints(schedule)
    projected = seqpoint.project(schedule, points, toy_measurements(points))
    # Two points weighing the run's three iterations between them; linear_cost per point.
    assert projected.totals["time_s"] == pytest.approx(sum(p.weight * linear_cost(p) for p in points.points))


def test_toy_inputs_are_exact() -> None:
    s = toy_schedule()
    assert s.seq_len.tolist() == [10, 10, 10, 20, 20, 30, 100, 100] and s.batch_size.tolist() == [1] * 8
    pts = toy_points(s, [0, 6])
    assert [(p.iteration, p.seq_len, p.weight) for p in pts.points] == [(0, 10, 4.0), (6, 100, 4.0)]
    ms = toy_measurements(pts, time_s_iqr=lambda p: 0.0)
    assert [m.metrics for m in ms.measurements] == [{"time_s": 0.6, "time_s_iqr": 0.0}, {"time_s": 1.5, "time_s_iqr": 0.0}]
    failed = toy_measurements(pts, status="oom")
    assert all(m.status == "oom" and not m.metrics for m in failed.measurements)
    v = varied_schedule(100)
    assert len(v) == 100 and (v.tgt_len > 0).all() and len(set(v.batch_size.tolist())) > 1


def test_toy_workload_keeps_the_contract_and_trains(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    from seqpoint.workloads import BatchShape, check_workload

    log = tmp_path / "shapes.jsonl"
    wl = ToyWorkload(ToyConfig(width=4, log=str(log)))
    check_workload(wl)
    batch = wl.make_batch(BatchShape.of((2, 6, 0), [6, 3]))
    assert batch["mask"].sum().item() == 9 and '"lengths": [6, 3]' in log.read_text()
    losses = [wl.step(batch) for _ in range(5)]
    assert losses[-1] < losses[0]
