"""The Ray executor on a real local Ray (two CPUs, no mocks), against the serial path."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from seqpoint.cache import MeasurementCache
from seqpoint.exceptions import ConfigError
from seqpoint.executors import Job, LocalExecutor, RayExecutor
from seqpoint.profiling import ProfileConfig
from seqpoint.selection import SeqPoint, SeqPoints

ray = pytest.importorskip("ray")

HERE = Path(__file__).resolve().parent
FLOPS = ProfileConfig(metrics=("flops",))
# One untimed and one timed step: enough to step the model (and die in it), and fast.
STEPPED = ProfileConfig(metrics=("time", "flops"), warmup=0, repeats=1)
POINTS = SeqPoints(
    method="seqpoint",
    n_iterations=10,
    points=(
        SeqPoint(iteration=1, batch_size=2, seq_len=24, tgt_len=0, weight=4),
        SeqPoint(iteration=5, batch_size=3, seq_len=40, tgt_len=0, weight=3),
        SeqPoint(iteration=8, batch_size=2, seq_len=33, tgt_len=0, weight=3),
    ),
)


@pytest.fixture(scope="module", autouse=True)
def local_ray(ray_session: Callable[..., contextlib.AbstractContextManager[None]]) -> Iterator[None]:
    with ray_session(HERE):  # the dying test workload lives beside this file
        yield


def _flops(ms_list: list) -> list[list[float]]:
    return [[m.metrics["flops"] for m in ms.measurements] for ms in ms_list]


def test_sweep_matches_serial_and_second_run_reads_the_cache(tmp_path: Path) -> None:
    jobs = [
        Job(workload="deepspeech2:tiny", config=FLOPS, points=POINTS),
        Job(workload="bert:tiny", config=FLOPS, points=[(2, 16, 0), (1, 24, 0)]),
    ]
    cache = MeasurementCache(tmp_path / "c.sqlite")
    ex = RayExecutor()
    got = ex.profile(jobs, cache=cache)
    want = LocalExecutor().profile(jobs)
    assert _flops(got) == _flops(want)
    for g, w in zip(got, want, strict=True):
        assert (g.workload, g.config, g.environment) == (w.workload, w.config, w.environment)
        assert [m.iteration for m in g.measurements] == [m.iteration for m in w.measurements]
    assert [m.iteration for m in got[0].measurements] == [1, 5, 8]
    assert ex.last_stats is not None
    assert (ex.last_stats.measured, ex.last_stats.tasks) == (5, 2)
    assert len(cache) == 5

    # a second run (a driver that already knows the fingerprints) launches no task at all
    same = ex  # a driver that already probed knows the keys
    assert same.profile(jobs, cache=cache) == got
    assert same.last_stats is not None
    assert (same.last_stats.cached, same.last_stats.tasks, same.last_stats.probes) == (5, 0, 0)


def test_cache_written_by_the_serial_path_is_read_by_ray(tmp_path: Path) -> None:
    jobs = [Job(workload="deepspeech2:tiny", overrides={"rnn_hidden": 48}, config=FLOPS,
                points=POINTS)]
    cache = MeasurementCache(tmp_path / "c.sqlite")
    want = LocalExecutor().profile(jobs, cache=cache)
    ex = RayExecutor()
    assert ex.profile(jobs, cache=cache) == want
    assert ex.last_stats is not None
    assert (ex.last_stats.cached, ex.last_stats.measured, ex.last_stats.tasks) == (3, 0, 0)
    assert ex.last_stats.probes == 1


def _dying_job(marker: Path, die_at: str) -> Job:
    return Job(workload="dying_workload:build",
               overrides={"marker": str(marker), "die_at": die_at},
               config=STEPPED, points=POINTS)


def test_a_killed_worker_is_retried_and_the_sweep_completes(tmp_path: Path) -> None:
    marker = tmp_path / "died"
    ex = RayExecutor()
    got = ex.profile([_dying_job(marker, "2,33,0")])
    assert marker.exists()  # the worker did die once
    assert [m.status for m in got[0].measurements] == ["ok", "ok", "ok"]
    # the same user workload in this process (the marker now spares it)
    want = LocalExecutor().profile([_dying_job(marker, "2,33,0")])
    assert _flops(got) == _flops(want)


def test_a_task_that_keeps_dying_fails_its_points_and_the_rest_is_cached(tmp_path: Path) -> None:
    marker = tmp_path / "died"
    cache = MeasurementCache(tmp_path / "c.sqlite")
    # Points run largest first: (3, 40), (2, 33), then (2, 24), where the worker dies.
    job = _dying_job(marker, "2,24,0")
    ex = RayExecutor(max_retries=0)
    got = ex.profile([job], cache=cache)
    statuses = {m.iteration: m.status for m in got[0].measurements}
    assert statuses == {1: "error", 5: "ok", 8: "ok"}
    lost = next(m for m in got[0].measurements if m.iteration == 1)
    assert "died" in lost.message.lower() or "crash" in lost.message.lower()
    assert len(cache) == 2  # each finished point was cached as it arrived

    resumed = ex.profile([job], cache=cache)  # the marker stops the death
    assert [m.status for m in resumed[0].measurements] == ["ok", "ok", "ok"]
    assert ex.last_stats is not None
    assert (ex.last_stats.cached, ex.last_stats.measured) == (2, 1)


def test_a_job_larger_than_the_cluster_is_refused() -> None:
    job = Job(workload="bert:tiny", overrides={"threads": 4}, config=FLOPS, points=[(1, 8, 0)])
    with pytest.raises(ConfigError, match="needs 4 CPUs per task but the Ray cluster has 2"):
        RayExecutor().profile([job])


def test_a_workload_that_does_not_load_is_bad_input(tmp_path: Path) -> None:
    job = Job(workload="no_such_module:build", config=FLOPS, points=[(1, 8, 0)])
    with pytest.raises(ConfigError, match="cannot import module 'no_such_module'"):
        RayExecutor().profile([job], cache=MeasurementCache(tmp_path / "c.sqlite"),
                              )
    # without a cache nothing is probed: the task records the failure on its points
    got = RayExecutor().profile([job])
    assert got[0].measurements[0].status == "error"
    assert "cannot import module 'no_such_module'" in got[0].measurements[0].message
