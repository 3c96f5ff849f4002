"""On Ray a user workload gets each point's real lengths, as in the serial path, and the
driver keys the cache with them the same way: the two paths read each other's rows."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from seqpoint.cache import MeasurementCache
from seqpoint.executors import Job, LocalExecutor, RayExecutor
from seqpoint.profiling import ProfileConfig
from seqpoint.selection import SeqPoint, SeqPoints

ray = pytest.importorskip("ray")
pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
SPEC = f"{HERE / 'masked_workload.py'}:MaskedMean"
CFG = ProfileConfig(metrics=("time", "flops"), warmup=0, repeats=1)
# One signature, two different batches (iterations 0 and 9 are the same batch).
POINTS = SeqPoints(
    method="seqpoint",
    n_iterations=10,
    points=(
        SeqPoint(iteration=0, batch_size=2, seq_len=12, weight=4, lengths=(12, 3)),
        SeqPoint(iteration=4, batch_size=2, seq_len=12, weight=3, lengths=(12, 7)),
        SeqPoint(iteration=9, batch_size=2, seq_len=12, weight=3, lengths=(12, 3)),
    ),
)


@pytest.fixture(scope="module", autouse=True)
def local_ray(ray_session: Callable[..., contextlib.AbstractContextManager[None]]) -> Iterator[None]:
    with ray_session(HERE):
        yield


def _job(log: Path) -> Job:
    return Job(workload=SPEC, overrides={"log": str(log)}, config=CFG, points=POINTS)


def _steps(log: Path) -> dict[tuple[int, ...], set[float]]:
    """Lengths → masked input means of the real (recorded-length) steps in ``log``."""
    out: dict[tuple[int, ...], set[float]] = {}
    for line in log.read_text().splitlines() if log.exists() else []:
        rec = json.loads(line)
        if rec["exact"]:
            out.setdefault(tuple(rec["lengths"]), set()).add(rec["data"])
    return out


def test_ray_workers_build_the_serial_paths_batches_from_the_real_lengths(tmp_path: Path) -> None:
    serial_log, ray_log = tmp_path / "serial.jsonl", tmp_path / "ray.jsonl"
    want = LocalExecutor().profile([_job(serial_log)])[0]
    ex = RayExecutor()
    got = ex.profile([_job(ray_log)])[0]  # no cache: the probe says it takes lengths
    assert ex.last_stats is not None and ex.last_stats.measured == 2  # (12, 3) once, (12, 7) once
    assert [m.iteration for m in got.measurements] == [0, 4, 9]
    assert all(m.ok for m in got.measurements)
    assert [m.metrics["flops"] for m in got.measurements] == [m.metrics["flops"] for m in want.measurements]
    ray_steps, serial_steps = _steps(ray_log), _steps(serial_log)
    assert set(ray_steps) == {(12, 3), (12, 7)}  # real lengths, not full rows, on the worker
    assert ray_steps == serial_steps  # the very same batches
    assert ray_steps[(12, 3)] != ray_steps[(12, 7)]
    # the two batches of one signature were measured apart, the repeated one once
    assert got.measurements[0].metrics["time_s"] == got.measurements[2].metrics["time_s"]


def test_ray_and_the_serial_path_hit_each_others_cache_rows(tmp_path: Path) -> None:
    log = tmp_path / "steps.jsonl"
    cache = MeasurementCache(tmp_path / "c.sqlite")
    ex = RayExecutor()
    got = ex.profile([_job(log)], cache=cache)[0]
    assert ex.last_stats is not None and ex.last_stats.measured == 2
    assert len(cache) == 2  # one row per distinct batch, keyed by its lengths
    lines = log.read_text()
    serial = LocalExecutor().profile([_job(log)], cache=cache)[0]
    assert serial == got and log.read_text() == lines  # every point from Ray's rows, no step

    other = MeasurementCache(tmp_path / "d.sqlite")
    first = LocalExecutor().profile([_job(log)], cache=other)[0]
    assert len(other) == 2
    again = RayExecutor()
    assert again.profile([_job(log)], cache=other)[0] == first
    assert again.last_stats is not None
    assert (again.last_stats.cached, again.last_stats.measured, again.last_stats.tasks) == (2, 0, 0)
