import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch")

from seqpoint.exceptions import SeqPointWarning
from seqpoint.executors import LocalExecutor
from seqpoint.projection import project
from seqpoint.schedule import read_schedule
from seqpoint.workflows import (
    BatchingSection,
    ProfileSection,
    SelectionSection,
    ValidationSection,
    WorkloadSection,
    run,
    speedup,
    validate,
)


@pytest.fixture
def _cfg(tiny_config):
    def make(tmp_path, *overrides, **kw):
        return tiny_config(tmp_path, *overrides,
                           **{"validation": ValidationSection(runs=2, baselines=("first", "random")), **kw})
    return make


def test_run_writes_folder_and_projects(tmp_path, _cfg):
    cfg = _cfg(tmp_path, "profile.cold_window=10")
    res = run(cfg)
    out = tmp_path / "run"
    for name in ("config.toml", "schedule.csv", "seqpoints.json", "measurements.json",
                 "projection.json", "environment.json", "report.html", "result.json"):
        assert (out / name).is_file(), name
    assert len(res.schedule) == 12  # 96 samples / 16 per batch x 2 epochs
    assert sum(p.weight for p in res.seqpoints.points) == 12
    proj = json.loads((out / "projection.json").read_text())
    assert proj["n_iterations"] == 12 and proj["projected"]["time_s"] > 0
    lo, hi = proj["interval"]["time_s"]
    assert lo <= proj["projected"]["time_s"] <= hi
    # 3 points x 3 steps, and the in-sequence window: the run's first 10 iterations
    assert len(res.measurements.window.times_s) == 10 and res.projection.in_run_ratio is not None
    assert res.reduction == pytest.approx(12 / (3 * 3 + 10))
    # a rerun hits the cache: identical measurements
    again = run(cfg)
    assert again.measurements.to_dict()["measurements"] == res.measurements.to_dict()["measurements"]


def test_validate_exact_flops_and_baselines(tmp_path, _cfg):
    cfg = _cfg(tmp_path, selection=SelectionSection(n_points=6))
    res = validate(cfg, ks=(1, 2, 6))
    assert res.full.iteration_s.shape == (2, 12)
    assert np.isfinite(res.full.noise_floor)
    # k equal to the 6 unique signatures: the FLOP projection is exact
    assert res.exact["flops"].error == pytest.approx(0.0, abs=1e-12)
    assert set(res.baselines) == {"first", "random"}
    assert res.curves_exact["seqpoint"].at(6) == pytest.approx(0.0, abs=1e-12)
    data = json.loads((tmp_path / "run" / "validation.json").read_text())
    assert data["n_iterations"] == 12 and "noise_floor" in data
    # Every signature is a SeqPoint, so the steady-state truth is the projection's own
    # steady state: no selection error, and nothing else to time.
    assert res.steady.n_signatures == 6
    assert res.steady.selection_error == pytest.approx(0.0, abs=1e-12)


def test_validate_holds_the_full_runs_to_an_interval_that_counts_the_machine_s_drift(tmp_path, _cfg):
    import dataclasses

    res = validate(_cfg(tmp_path, "profile.cold_window=10"), ks=(1, 3), exact=False)
    # The drift check point (the first SeqPoint) is timed again at the end of each full run.
    assert res.full.check_s.shape == (2, 3) and np.all(res.full.check_s > 0)
    drift = res.truth.drift
    assert drift is not None and np.isfinite(drift.change) and drift.standard_error >= 0
    own = res.projection.interval[res.to_dict()["projected_metric"]]
    lo, hi = res.truth.interval_s
    assert lo <= own[0] and hi >= own[1]  # grown, never narrowed
    saved = json.loads((tmp_path / "run" / "validation.json").read_text())
    assert saved["drift"]["change"] == pytest.approx(drift.change)
    # The default window's in-run gap is in the projection's interval, and said on its own.
    from rich.console import Console

    from seqpoint.reports import print_validation

    r, gap = res.projection.in_run_ratio, res.projection.in_run_gap
    assert r is not None and gap == pytest.approx(abs(r - 1) * res.projection.totals["run_time_s"])
    console = Console(record=True, width=300)
    print_validation(console, res, seqpoints=False)
    assert f"the run's first {len(res.measurements.window.times_s)} steps timed in sequence ran {r:.3f}×" \
        in console.export_text()
    # A machine 30% slower during the full runs: the interval grows to hold the projection
    # at that speed, and the mean of runs 30% slower than projected is inside it.
    slower = dataclasses.replace(res, full=dataclasses.replace(
        res.full, check_s=np.array(drift.profiled).mean() * 1.3 * np.ones((2, 3))))
    t = slower.truth
    assert t.drift.change == pytest.approx(1.3 * np.mean(drift.profiled) / np.median(drift.profiled) - 1)
    assert t.interval_s[1] >= 1.25 * res.truth.projected_s


@pytest.mark.parametrize(("runs", "processes", "plan"), [
    (2, 3, {0: 1, 1: 1}), (2, 5, {1: 1, 3: 1}), (3, 3, {0: 1, 1: 2}), (1, 3, {1: 1}),
    (2, 2, {0: 2}), (2, 1, {}),
])
def test_interleave_plan_spreads_the_runs_over_the_gaps(runs, processes, plan):
    from seqpoint.workflows import interleave_plan

    assert interleave_plan(runs, processes) == plan


@pytest.mark.slow  # full runs in fresh processes: make test-slow
def test_validate_times_full_runs_between_the_workers(tmp_path, _cfg):
    # 2 worker processes, 2 runs: both runs in the gap between the workers (P F F P).
    profile = ProfileSection(warmup=1, repeats=2, processes=2, metrics=("time",),
                             cache=str(tmp_path / "cache.sqlite"))
    cfg = _cfg(tmp_path, profile=profile,
               validation=ValidationSection(runs=2, baselines=("first",), steady_truth=False))
    res = validate(cfg, ks=(1, 3), exact=False)
    assert res.full.iteration_s.shape == (2, 12) and res.full.interleaved == 2
    saved = json.loads((tmp_path / "run" / "full_run.json").read_text())
    assert saved["interleaved"] == 2 and len(saved["totals_s"]) == 2
    assert json.loads((tmp_path / "run" / "validation.json").read_text())["runs_interleaved"] == 2
    # Everything cached: nothing is timed by the workers, so both runs come after.
    again = validate(cfg, ks=(1, 3), exact=False)
    assert again.full.interleaved == 0 and again.full.n_runs == 2


class _Watched(LocalExecutor):
    """The local executor, keeping the points of every job it measures."""

    def __init__(self) -> None:
        super().__init__()
        self.jobs: list[list[tuple[int, ...]]] = []

    def profile(self, jobs, **kw):
        self.jobs += [[tuple(getattr(p, "signature", p)) for p in getattr(j.points, "points", j.points)] for j in jobs]
        return super().profile(jobs, **kw)


@pytest.mark.slow  # full runs in fresh processes: make test-slow
def test_validate_times_the_steady_truth_in_the_seqpoints_workers(tmp_path, recorder, _cfg):
    # The steady-state truth's signatures go to the same measurement (the same worker
    # processes, with the full runs between them) as the SeqPoints, not to a later one.
    profile = ProfileSection(warmup=1, repeats=2, processes=2, metrics=("time",), use_cache=False, cold_window=0)
    cfg = _cfg(tmp_path, profile=profile, validation=ValidationSection(runs=2, baselines=("first",)))
    watched = _Watched()
    res = validate(cfg, ks=(1, 3), exact=False, reporter=recorder, executor=watched)
    assert len(watched.jobs) == 1 and len(watched.jobs[0]) == 6  # 3 SeqPoints and the 3 other signatures
    # The first SeqPoint (the drift check point) first, then every signature in order, so
    # each SeqPoint is timed beside the shapes it stands for.
    order = watched.jobs[0]
    assert order[0] == res.seqpoints.points[0].signature and order[1:] == sorted(order[1:])
    # the full runs between the two workers, each its own fresh process; nothing measured after
    workers = [i for i, line in enumerate(recorder.seen) if ": worker " in line]
    runs = [i for i, line in enumerate(recorder.seen) if line.startswith("full run")]
    assert len(workers) == 2 and "6 points" in recorder.seen[workers[0]]
    assert len(runs) == 2 and workers[0] < runs[0] < runs[1] < workers[1]
    assert [m.iteration for m in res.measurements.measurements] == [p.iteration for p in res.seqpoints.points]
    assert res.full.interleaved == 2 and res.steady.n_signatures == 6
    assert np.isfinite(res.steady.selection_error) and res.steady.total_s > 0
    saved = json.loads((tmp_path / "run" / "measurements.json").read_text())
    assert len(saved["measurements"]) == 3  # the SeqPoints' only
    assert res.measurements.protocol["processes"] == 2


def test_speedup_threads_same_points(tmp_path, _cfg):
    profile = ProfileSection(warmup=1, repeats=2, metrics=("time",), use_cache=False, cold_window=3)
    a = _cfg(tmp_path, profile=profile)
    b = _cfg(tmp_path, workload=WorkloadSection(name="deepspeech2:tiny", set={"threads": 1, "dtype": "bf16"}),
             profile=profile)
    res = speedup(a, b)
    # both get the run's first steps timed in sequence (B did not before: its whole run was
    # projected with another cold-step calibration than A's)
    assert res.measurements_a.window is not None and res.measurements_b.window is not None
    ma, mb = res.measurements_a.measurements, res.measurements_b.measurements
    assert all(m.ok for m in (*ma, *mb))
    # Both configurations were measured on the very same SeqPoints ...
    points = res.seqpoints.points
    assert [m.iteration for m in ma] == [p.iteration for p in points] == [m.iteration for m in mb]
    assert [m.signature for m in ma] == [p.signature for p in points] == [m.signature for m in mb]
    assert res.measurements_a.workload == res.measurements_b.workload
    assert res.measurements_a.config != res.measurements_b.config  # ... under different configs
    out = tmp_path / "run"
    saved = [json.loads((out / f"measurements_{t}.json").read_text()) for t in "ab"]
    assert [[m["iteration"] for m in s["measurements"]] for s in saved] == [[p.iteration for p in points]] * 2
    # ... and the speedup is the ratio of the two projected whole runs (cold steps included,
    # as a sweep compares them) over the same schedule, with the steady state's beside it.
    schedule = read_schedule(out / "schedule.csv")
    pa = project(schedule, res.seqpoints, res.measurements_a)
    pb = project(schedule, res.seqpoints, res.measurements_b)
    assert res.speedup.metric == "run_time_s"
    assert res.speedup.total_a == pytest.approx(pa.totals["run_time_s"])
    assert res.speedup.total_b == pytest.approx(pb.totals["run_time_s"])
    assert res.speedup.value == pytest.approx(pa.totals["run_time_s"] / pb.totals["run_time_s"])
    assert res.speedup.steady_value == pytest.approx(pa.totals["time_s"] / pb.totals["time_s"])
    saved_sp = json.loads((out / "speedup.json").read_text())
    assert saved_sp["speedup"] == pytest.approx(res.speedup.value) and saved_sp["metric"] == "run_time_s"


def test_speedup_with_worker_processes_alternates_a_and_b(tmp_path, monkeypatch, recorder, _cfg):
    def order():
        return [line.split()[1] for line in recorder.seen if ": worker " in line]

    profile = ProfileSection(warmup=1, repeats=2, processes=2, metrics=("time", "flops"), use_cache=False,
                             cold_window=0)  # no window: a fresh process of its own each
    a = _cfg(tmp_path, workload=WorkloadSection(name="deepspeech2:tiny", set={"threads": 1, "dtype": "fp32"}),
             profile=profile)
    b = _cfg(tmp_path, workload=WorkloadSection(name="deepspeech2:tiny", set={"threads": 1, "dtype": "bf16"}),
             profile=profile)
    res = speedup(a, b, reporter=recorder)
    # A's and B's workers took turns (A1 B1 B2 A2), not A's two and then B's two.
    assert order() == ["A", "B", "B", "A"]
    for ms in (res.measurements_a, res.measurements_b):
        assert ms.protocol["processes"] == 2
        assert all(m.ok and m.metrics["processes"] == 2.0 and m.metrics["flops"] > 0 for m in ms.measurements)
    assert res.measurements_a.config["dtype"] == "fp32" and res.measurements_b.config["dtype"] == "bf16"
    assert res.speedup.value > 0 and res.speedup.pairs == 0  # the default noise rule: independent
    # each worker's own values, which project_speedup(noise="pairs") pairs A's worker p with B's by
    assert all(len(m.samples["time_s_processes"]) == 2 for ms in (res.measurements_a, res.measurements_b)
               for m in ms.measurements)
    saved = [json.loads((tmp_path / "run" / f"measurements_{t}.json").read_text()) for t in "ab"]
    assert [s["config"]["dtype"] for s in saved] == ["fp32", "bf16"]

    # Workers in one configuration only: nothing to alternate with, A then B as before.
    import seqpoint.profiling

    def no_turns(jobs):
        raise AssertionError("take_turns with one configuration's workers")

    assert res.in_turn and json.loads((tmp_path / "run" / "speedup.json").read_text())["in_turn"] is True

    monkeypatch.setattr(seqpoint.profiling, "take_turns", no_turns)
    recorder.seen.clear()
    serial_b = _cfg(tmp_path, workload=b.workload, profile=ProfileSection(warmup=1, repeats=2, metrics=("time",),
                                                                           use_cache=False, cold_window=0))
    with pytest.warns(SeqPointWarning, match=r"Only A has \[profile\] processes > 1 .* not in turn"):
        mixed = speedup(a, serial_b, reporter=recorder)
    assert order() == ["A", "A"] and mixed.measurements_b.protocol == {} and not mixed.in_turn
    saved_sp = json.loads((tmp_path / "run" / "speedup.json").read_text())
    assert saved_sp["in_turn"] is False and saved_sp["run_folder"] == str(tmp_path / "run")

    # Unequal worker counts: said before anything is measured (the extra workers run alone).
    def stop(jobs):
        raise RuntimeError("stop here")

    monkeypatch.setattr(seqpoint.profiling, "take_turns", stop)
    three = _cfg(tmp_path, workload=b.workload, profile=ProfileSection(warmup=1, repeats=3, processes=3,
                                                                        metrics=("time",), use_cache=False))
    with pytest.warns(SeqPointWarning, match=r"processes = 2 and B 3.*B's last 1 run\(s\) alone"), \
            pytest.raises(RuntimeError, match="stop here"):
        speedup(a, three)


@pytest.mark.slow  # full runs in fresh processes: make test-slow
def test_speedup_validate_times_both_full_runs_in_alternating_rounds(tmp_path, recorder, _cfg):
    def order():
        return [line for line in recorder.seen if line.startswith("full run")]

    profile = ProfileSection(warmup=1, repeats=2, metrics=("time",), use_cache=False)
    a = _cfg(tmp_path, workload=WorkloadSection(name="deepspeech2:tiny", set={"threads": 1, "dtype": "fp32"}),
             profile=profile, validation=ValidationSection(runs=2, epochs=1))
    b = _cfg(tmp_path, workload=WorkloadSection(name="deepspeech2:tiny", set={"threads": 1, "dtype": "bf16"}),
             profile=profile, validation=a.validation)
    res = speedup(a, b, validate=True, reporter=recorder)
    # Projected on the validation part (1 of 2 epochs), which both ran in full: a b, then b a.
    assert res.n_iterations == 6 and sum(p.weight for p in res.seqpoints.points) == 6
    assert order() == [f"full run {r}/2 of {t} (fresh process)" for r, t in ((1, "A"), (1, "B"), (2, "B"), (2, "A"))]
    m = res.measured
    assert m is not None and m.n_rounds == 2 and all(t > 0 for t in (*m.runs_a_s, *m.runs_b_s))
    saved = json.loads((tmp_path / "run" / "speedup.json").read_text())
    assert saved["measured"]["speedup"] == pytest.approx(m.value)
    assert saved["measured"]["error"] == pytest.approx((res.speedup.value - m.value) / m.value)
    lo, hi = res.speedup.interval
    assert saved["measured"]["interval_holds"] == (lo <= m.value <= hi)
    runs = json.loads((tmp_path / "run" / "full_runs.json").read_text())
    assert runs == {"runs_a_s": list(m.runs_a_s), "runs_b_s": list(m.runs_b_s)}
    # without validate nothing runs in full and the whole run is projected
    recorder.seen.clear()
    plain = speedup(a, b, reporter=recorder)
    assert order() == [] and plain.measured is None and plain.n_iterations == 12


def test_speedup_rejects_different_runs(tmp_path, _cfg):
    from seqpoint.exceptions import ConfigError
    from seqpoint.workflows import ProjectionSection

    ddp = BatchingSection(policy="sortagrad", epochs=2, params={"batch_size": 16}, world_size=2)
    proj = ProjectionSection(allreduce_s=0.001)
    with pytest.raises(ConfigError, match=r"world_size = 2 is data-parallel.*validate_ddp"):
        speedup(_cfg(tmp_path, batching=ddp, projection=proj), _cfg(tmp_path, batching=ddp, projection=proj),
                        validate=True)

    a = _cfg(tmp_path)
    b = _cfg(tmp_path, batching=BatchingSection(policy="fixed", params={"batch_size": 16}))
    with pytest.raises(ConfigError, match=r"differ in \[batching\]"):
        speedup(a, b)

    # B's [validation] and [report] are A's: a config B whose sections differ gets a warning (not
    # silently unused; an override of them with --set-b is refused, tests/cli/test_options_cli.py)
    b = _cfg(tmp_path, validation=ValidationSection(runs=3))
    with pytest.warns(SeqPointWarning, match=r"B's \[validation\] differs from A's and is not used"):
        speedup(a, b)


def _cli(*args, env_cache):
    return subprocess.run([sys.executable, "-m", "seqpoint.cli", *args], capture_output=True, text=True,
                          env={"SEQPOINT_CACHE": env_cache, "PATH": "/usr/bin:/bin"}, timeout=300)


@pytest.mark.parametrize(
    ("toml", "match"),
    [
        ("[batching\n", "invalid TOML"),
        ("[batching]\npolcy = 'x'\n", "Unknown key(s) 'polcy'"),
        ("[batching]\npolicy = 'nope'\n", "Unknown batching policy 'nope'"),
        ("[workload]\nname = 'nope:tiny'\n", "Give a registered workload"),
        ("[lengths]\nsource = 'missing.csv'\n", "missing.csv"),
        ("[projection]\nprofiled_on = 'h100'\n", "set device too"),
        ("[lengths]\nsource = 'bundled:wikitext-2-valid'\n[workload]\nname = 'bert:tiny'\n[profile]\n"
         "metrics = ['time']\n[projection]\ndevice = 'h200'\n", "metrics that include \"time\" and \"breakdown\""),
    ],
)
def test_cli_run_bad_config_one_line_exit_2(tmp_path, toml, match):
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml)
    r = _cli("run", str(cfg), "-o", str(tmp_path / "o"), env_cache=str(tmp_path / "c.sqlite"))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert match in lines[0]
    assert "Traceback" not in r.stderr


def test_a_run_folder_that_holds_another_commands_files_warns_once(tmp_path):
    import warnings

    from seqpoint.workflows import RunFolder

    first = RunFolder(tmp_path / "out", "run")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a new folder, then the same command again (a resumed run)
        first.write_text("a.txt", "x")
        first.write_json("b.json", {})
        RunFolder(tmp_path / "out", "run").write_text("a.txt", "x")
    second = RunFolder(tmp_path / "out", "validate")
    with pytest.warns(SeqPointWarning, match=r"already holds 2 file\(s\) of seqpoint run \(a.txt, b.json\)"):
        second.write_text("c.txt", "y")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per run folder object
        second.write_text("d.txt", "z")
    # files seqpoint did not mark are another run's too
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.warns(SeqPointWarning, match=r"1 file\(s\) of an earlier run \(notes.txt\)"):
        RunFolder(tmp_path / "mine", "run").write_text("a.txt", "x")

