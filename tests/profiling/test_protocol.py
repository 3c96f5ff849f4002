"""The multi-process protocol: repeats spread over fresh processes, interleaved, drift checked."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from seqpoint import Reporter  # noqa: E402
from seqpoint.cache import MeasurementCache  # noqa: E402
from seqpoint.exceptions import ConfigError  # noqa: E402
from seqpoint.measurements import per_process_key, standard_error  # noqa: E402
from seqpoint.profiling import (  # noqa: E402
    DEFAULT_BLOCK,
    STARTUP_STEPS,
    DriftWarning,
    ProfileConfig,
    Profiler,
    ShippedWorkload,
    WorkerResult,
    WorkerTask,
    interleave_block,
    profile_points,
    profile_protocol,
    run_worker,
    split_repeats,
)
from seqpoint.validation import reduction_factor  # noqa: E402
from seqpoint.workloads import WorkloadRecipe, load_workload  # noqa: E402

POINTS = [(2, 24, 0), (2, 40, 0), (4, 16, 0)]
P2 = ProfileConfig(processes=2, repeats=4, warmup=2, drift_steps=2, metrics=("time", "flops"))


@pytest.fixture(scope="module")
def bert() -> Any:
    return load_workload("bert:tiny", {"threads": 1})


#: What the campaign fixture's reporter saw after each worker process.
AFTER_WORKER: list[str] = []


@pytest.fixture(scope="module")
def campaign(bert: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, MeasurementCache]:
    cache = MeasurementCache(tmp_path_factory.mktemp("c") / "m.sqlite")
    hooked = Reporter(progress=False).hooked(lambda p, last: AFTER_WORKER.append(f"{p}{' last' if last else ''}"))
    return Profiler(bert, cache=cache, reporter=hooked).measure(POINTS, P2), cache


def test_default_config_keeps_its_cache_key_and_step_count() -> None:
    d = ProfileConfig().to_dict()
    assert not {"processes", "interleave", "drift_steps"} & set(d)
    assert ProfileConfig().protocol_steps() == 0
    assert ProfileConfig(warmup=2, repeats=5).point_steps() == (2, 5, 0)
    assert {"processes", "interleave", "drift_steps"} <= set(P2.to_dict())


def test_processes_must_not_exceed_repeats() -> None:
    with pytest.raises(ConfigError, match="'processes'.*<= repeats"):
        ProfileConfig(processes=3, repeats=2)
    with pytest.raises(ValueError, match="processes"):
        ProfileConfig(processes=0)


def test_split_repeats_spreads_the_total() -> None:
    assert split_repeats(5, 2) == [3, 2]
    assert split_repeats(4, 4) == [1, 1, 1, 1]
    assert sum(split_repeats(17, 3)) == 17


def test_two_processes_give_per_process_values(campaign: tuple[Any, MeasurementCache]) -> None:
    ms, _ = campaign
    assert [m.signature for m in ms.measurements] == POINTS
    for m in ms.measurements:
        assert m.ok, m.message
        assert len(m.samples["time_s"]) == 4  # the total over both processes
        per = m.samples[per_process_key("time_s")]
        assert len(per) == 2 and all(v > 0 for v in per)
        assert m.metrics["processes"] == 2.0
        assert m.metrics["time_s_first"] > 0  # each process's first step of the shape
        assert m.metrics["flops"] > 0  # counted in the driver, merged
        between = float(torch.tensor(per, dtype=torch.float64).std()) / 2**0.5
        assert m.metrics["time_s_sem"] == pytest.approx(between)
        assert standard_error(m, "time_s") >= between
    proto = ms.protocol
    assert proto["processes"] == 2 and proto["repeats_per_process"] == [2, 2]
    assert proto["check"] == list(POINTS[0])
    assert len(proto["drift"]) == 2
    assert all(d["start_s"] > 0 and d["end_s"] > 0 for d in proto["drift"])


def test_cache_round_trip_keeps_per_process_values(bert: Any, campaign: tuple[Any, MeasurementCache]) -> None:
    ms, cache = campaign
    again = profile_points(bert, POINTS, P2, cache=cache, progress=False)
    assert again.protocol == {}  # nothing measured: every point came from the cache
    assert [m.samples for m in again.measurements] == [m.samples for m in ms.measurements]
    assert [m.metrics for m in again.measurements] == [m.metrics for m in ms.measurements]
    # The serial path has its own key: it is not answered by the protocol's rows.
    serial = ProfileConfig(repeats=4, warmup=2, metrics=("time", "flops"))
    name, cfg = bert.name, bert.config.to_dict()
    env = {"x": 1}
    assert cache.key(name, cfg, env, POINTS[0], serial.to_dict()) != cache.key(
        name, cfg, env, POINTS[0], P2.to_dict())


def test_steps_are_counted() -> None:
    # Each process warms every point up again; repeats are the total over processes.
    assert P2.point_steps() == (4, 4, 0)
    assert P2.protocol_steps() == 2 * (STARTUP_STEPS + 2 * 2 + 1)
    with_breakdown = dataclasses.replace(P2, metrics=("time", "breakdown"))
    assert with_breakdown.point_steps() == (6, 4, 1)  # the driver's warm-up for the breakdown
    executed = 3 * (4 + 4 + 0) + P2.protocol_steps()
    steps = P2.point_steps()._asdict()
    assert reduction_factor(executed, 3, **steps, overhead=P2.protocol_steps()) == 1.0
    # Without time no worker process runs: one warm-up per point, no start-up or drift checks.
    untimed = dataclasses.replace(P2, metrics=("flops",))
    assert untimed.point_steps() == (2, 4, 0) and untimed.protocol_steps() == 0


def test_a_worker_runs_exactly_the_counted_steps() -> None:
    bert = ShippedWorkload(name="bert:tiny", recipe=WorkloadRecipe(spec="bert:tiny", overrides={"threads": 1}))
    task = WorkerTask(workload=bert, points=tuple(POINTS), decoy=(2, 39, 0),
                      warmup=2, repeats=3, drift_steps=2, timer="wall", interleave=True, max_seconds=0.0)
    out = run_worker(task)  # in this process: what one worker returns
    assert [len(t) for t in out.times] == [3] * len(POINTS)  # by position in task.points
    assert set(out.first) == set(range(len(POINTS)))
    assert len(out.start_s) == len(out.end_s) == 2
    assert not out.failed


def test_interleaving_blocks_fit_onednns_primitive_cache() -> None:
    # deepspeech2:tiny: 16 primitives per shape, 18 shared, 1,024 entries -> 62 shapes.
    assert interleave_block((16, 18), 1024) == 62
    assert interleave_block((16, 18), 16384) == 1022
    assert interleave_block((600, 18), 1024) == 1
    assert interleave_block(None, 1024) == DEFAULT_BLOCK
    assert interleave_block((0, 5), 1024) > 10**6  # nothing cached per shape: one block


def test_a_worker_interleaves_block_by_block(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[tuple[int, ...]] = []
    # oneDNN's primitives are not counted (no start-up shape): blocks of DEFAULT_BLOCK points
    points = tuple((2, 8 + 8 * i, 0) for i in range(DEFAULT_BLOCK + 1))

    class Recorder:
        def make_batch(self, sig: tuple[int, ...]) -> tuple[int, ...]:
            return sig

        def step(self, batch: tuple[int, ...]) -> None:
            order.append(batch)

    recorder = Recorder()
    monkeypatch.setattr(ShippedWorkload, "build", lambda self: recorder)
    task = WorkerTask(workload=ShippedWorkload(name="x"), points=points, decoy=None, warmup=1, repeats=2,
                      drift_steps=1, timer="wall", interleave=True, max_seconds=0.0)
    out = run_worker(task)
    first, last = points[:DEFAULT_BLOCK], points[DEFAULT_BLOCK]
    assert order == [first[0], first[0],  # the check point warmed, then its start check
                     *first[1:], *first, *first,  # block 1: the others warmed, then 2 rounds over it
                     last, last, last,  # block 2: warmed, 2 rounds
                     first[0], first[0]]  # the check re-warmed, then its end check
    assert [len(t) for t in out.times] == [2] * len(points)
    assert len(order) == len(points) * (1 + 2) + task.drift_steps * 2 + 1


def _fake_worker(start: float, end: float) -> Any:
    def run(p: int, task: WorkerTask) -> WorkerResult:
        times = [[0.01 * (i + 1)] * task.repeats for i in range(len(task.points))]
        return WorkerResult(times=times, first={i: 0.02 for i in range(len(task.points))}, failed={},
                            start_s=[start, start * 1.001], end_s=[end, end * 1.001])
    return run


def test_drift_above_the_noise_warns(bert: Any) -> None:
    # one warning for both workers, not one each
    with pytest.warns(DriftWarning, match=r"^Worker processes 1/2 \(\+20\.\d\d%, noise ±\d+\.\d\d%\) and "
                      r"2/2 \(\+20\.\d\d%, noise ±\d+\.\d\d%\) drifted on the check point") as record:
        ms, proto = profile_protocol(ShippedWorkload.of(bert), POINTS, P2, None, run=_fake_worker(0.010, 0.012))
    assert len([w for w in record if issubclass(w.category, DriftWarning)]) == 1
    assert all(d["above_noise"] for d in proto["drift"])
    assert ms[POINTS[1]].metrics["time_s"] == pytest.approx(0.02)
    assert ms[POINTS[1]].metrics["time_s_sem"] == 0.0  # both processes agree


def test_only_the_workers_that_drifted_are_named(bert: Any) -> None:
    steady, drifting = _fake_worker(0.010, 0.010), _fake_worker(0.010, 0.012)
    calls: list[int] = []

    def run(p: int, task: WorkerTask) -> dict[str, Any]:
        calls.append(1)
        return (drifting if len(calls) == 2 else steady)(p, task)

    with pytest.warns(DriftWarning, match=r"^Worker process 2/2 \(\+20\.\d\d%, noise ±\d+\.\d\d%\) drifted on .* while it measured"):
        profile_protocol(ShippedWorkload.of(bert), POINTS, P2, None, run=run)


def test_a_drift_warning_names_the_campaign(bert: Any) -> None:
    # speedup's A and B run the same workload: the warning says which configuration drifted
    with pytest.warns(DriftWarning, match=r"Worker processes 1/2 \(.*\) and 2/2 \(.*\) of B bert:tiny drifted"):
        profile_protocol(ShippedWorkload.of(bert), POINTS, P2, None, run=_fake_worker(0.010, 0.012), label="B bert:tiny")


def test_stop_workers_kills_a_worker_another_thread_waits_on() -> None:
    import threading
    import time

    from seqpoint.clocks import in_fresh_process, stop_workers

    failed: list[BaseException] = []

    def wait_on_worker() -> None:
        try:
            in_fresh_process(time.sleep, 60)
        except RuntimeError as exc:
            failed.append(exc)

    t = threading.Thread(target=wait_on_worker)
    t0 = time.perf_counter()
    t.start()
    deadline = time.perf_counter() + 30
    while time.perf_counter() < deadline:  # until the worker is running
        stop_workers()
        t.join(timeout=0.2)
        if not t.is_alive():
            break
    assert not t.is_alive() and time.perf_counter() - t0 < 30
    assert failed and "worker process failed" in str(failed[0])


def test_the_reporters_hooks_run_after_every_worker(campaign: tuple[Any, MeasurementCache]) -> None:
    # validate times its full runs there (after every worker but the last), speedup hands the turn over
    assert AFTER_WORKER == ["0", "1 last"]


def test_the_workers_compilations_are_summarised(bert: Any, campaign: tuple[Any, MeasurementCache]) -> None:
    assert campaign[0].compile == {}  # eager: nothing compiled in either worker
    fake, paid = _fake_worker(0.010, 0.010), iter([(3.0, 2), (5.0, 3), (4.0, 2), None, (0.0, 0)])

    def run(p: int, task: WorkerTask) -> WorkerResult:
        return dataclasses.replace(fake(p, task), compiled=next(paid))

    three = dataclasses.replace(P2, processes=3, repeats=3)
    _, proto = profile_protocol(ShippedWorkload.of(bert), POINTS, three, None, run=run)
    assert proto["compile"] == {"seconds": 4.0, "graphs": 2, "processes": 3.0, "spread_s": 2.0}
    # A worker where nothing compiled says nothing; one that compiled only at start-up, 0 s.
    _, proto = profile_protocol(ShippedWorkload.of(bert), POINTS, P2, None, run=run)
    assert proto["compile"] == {"seconds": 0.0, "graphs": 0, "processes": 1.0, "spread_s": 0.0}
