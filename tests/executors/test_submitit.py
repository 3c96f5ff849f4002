"""The submitit executor with submitit's own local cluster (subprocess jobs, no Slurm, no
mocks): the same measurements and cache rows as the serial path."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seqpoint.cache import MeasurementCache
from seqpoint.exceptions import ConfigError
from seqpoint.executors import Job, LocalExecutor, SubmititExecutor
from seqpoint.profiling import ProfileConfig
from seqpoint.workloads import load_workload

pytest.importorskip("submitit")
pytest.importorskip("torch")

FLOPS = ProfileConfig(metrics=("flops",))
POINTS = [(2, 24, 0), (3, 40, 0), (2, 24, 0)]


def test_jobs_measure_what_the_serial_path_measures_and_share_its_cache(tmp_path: Path) -> None:
    cache = MeasurementCache(tmp_path / "c.sqlite")
    jobs = [Job(workload="deepspeech2:tiny", overrides={"threads": 1}, config=FLOPS, points=POINTS),
            Job(workload="bert:tiny", overrides={"threads": 1}, config=FLOPS, points=[(1, 16, 0)])]
    ex = SubmititExecutor(tmp_path / "jobs", cluster="local")
    got = ex.profile(jobs, cache=cache)
    want = LocalExecutor().profile(jobs)
    assert [[m.metrics["flops"] for m in ms.measurements] for ms in got] == \
        [[m.metrics["flops"] for m in ms.measurements] for ms in want]
    assert ex.last_stats is not None and (ex.last_stats.measured, ex.last_stats.tasks) == (3, 2)
    assert len(cache) == 3  # the driver wrote each distinct point once
    # the serial path reads the rows the jobs wrote: nothing is measured again
    local = LocalExecutor()
    assert local.profile(jobs, cache=cache) == got and local.last_stats is not None
    assert local.last_stats.measured == 0
    assert list((tmp_path / "jobs").iterdir())  # submitit's job folders: scripts, pickles, logs


def test_a_built_workload_travels_pickled(tmp_path: Path) -> None:
    wl = load_workload("deepspeech2:tiny", {"threads": 1})
    got = SubmititExecutor(tmp_path, cluster="local").profile([Job(workload=wl, config=FLOPS, points=POINTS[:1])])
    assert got[0].measurements[0].metrics["flops"] == LocalExecutor().profile(
        [Job(workload=wl, config=FLOPS, points=POINTS[:1])])[0].measurements[0].metrics["flops"]


def test_a_workload_that_does_not_load_fails_its_points_or_is_refused(tmp_path: Path) -> None:
    job = Job(workload="no_such_module:build", config=FLOPS, points=[(1, 8, 0)])
    with pytest.raises(ConfigError, match="cannot import module 'no_such_module'"):
        SubmititExecutor(tmp_path, cluster="local").profile([job], cache=MeasurementCache(tmp_path / "c.sqlite"))
    got = SubmititExecutor(tmp_path, cluster="local").profile([job])  # nothing probed without a cache
    assert got[0].measurements[0].status == "error"
    assert "cannot import module 'no_such_module'" in got[0].measurements[0].message


def test_bad_parameters_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"The 'cluster' parameter of SubmititExecutor must be one of"):
        SubmititExecutor(tmp_path, cluster="moon")
    job = Job(workload="deepspeech2:tiny", config=FLOPS, points=[(1, 8, 0)])
    with pytest.raises(ConfigError, match="submitit refused the task's parameters"):
        SubmititExecutor(tmp_path, cluster="local", parameters={"no_such_knob": 1}).profile([job])


def test_profile_takes_the_executor_on_the_command_line(
    tmp_path: Path, cli: Callable[[list[str]], tuple[int, str, str]]
) -> None:
    sp = tmp_path / "sp.json"
    sp.write_text(json.dumps({"method": "s", "n_iterations": 4, "points": [
        {"iteration": 0, "batch_size": 2, "seq_len": 24, "tgt_len": 0, "weight": 4}]}))
    code, out, err = cli(["profile", str(sp), "-w", "deepspeech2:tiny", "--set", "workload.set.threads=1",
                          "-m", "flops", "--no-cache", "--executor", "submitit", "-o", str(tmp_path / "m.json"),
                          "--json"])
    assert code == 0, err
    assert json.loads(out)["ok"] == 1


def test_a_driver_without_the_workloads_gpu_counts_on_a_cpu_stand_in(tmp_path: Path) -> None:
    """A CUDA workload sent to tasks from a machine without a GPU (a Slurm login node): the default
    proxy counts the workload here, on a CPU copy (no CUDA context beside the tasks that own the
    GPU), and says the proxy device it could not see; only the tasks' own probe fails on this CPU
    machine, and the run folder's manifest names no GPU of this process."""
    import torch

    from seqpoint.exceptions import SeqPointWarning
    from seqpoint.workflows import Campaign, RunConfig, run

    if torch.cuda.is_available():
        pytest.skip("this driver has a GPU: the stand-in is what it does not build on")
    spec: dict[str, Any] = {
        "lengths": {"source": "bundled:wikitext-2-valid", "max_samples": 64},
        "batching": {"policy": "fixed", "params": {"batch_size": 8}}, "selection": {"n_points": 2},
        "workload": {"name": "bert:tiny", "set": {"device": "cuda"}},
        "report": {"out": str(tmp_path / "run"), "plots": False, "html": False}}
    cfg = RunConfig.from_dict(spec)
    c = Campaign(cfg, executor=SubmititExecutor(folder=tmp_path / "jobs"))
    with pytest.warns(SeqPointWarning, match="this process does not see the GPU the submitit tasks run on"):
        assert len(c.seqpoints) == 2  # selected on the exact costs counted here
    assert c.workload.config.device == "cpu" and c.job(()).overrides == {"device": "cuda"}
    with pytest.raises(ConfigError, match="torch sees no CUDA device") as info, \
            pytest.warns(SeqPointWarning, match="proxy_device"):
        run(cfg, executor=SubmititExecutor(folder=tmp_path / "jobs"))
    assert "\n" not in str(info.value)
    manifest = json.loads((tmp_path / "run" / "environment.json").read_text())
    assert (manifest["device_type"], manifest["device"], manifest["cuda_available"]) == ("cuda", "none in this process",
                                                                                          False)
    # A window asked for by name would time the CPU stand-in: refused before any task is sent.
    windowed = Campaign(RunConfig.from_dict({**spec, "profile": {"cold_window": 10}}),
                        executor=SubmititExecutor(folder=tmp_path / "windowed"))
    with pytest.raises(ConfigError, match=r"^\[profile\] cold_window: the points are measured in submitit tasks"):
        windowed.measure_seqpoints()
    assert not (tmp_path / "windowed").exists() or not any((tmp_path / "windowed").iterdir())


@pytest.mark.gpu
def test_a_campaign_measured_in_tasks_makes_no_cuda_context_here(tmp_path: Path) -> None:
    """A CUDA workload measured in submitit tasks (each its own process on the GPU): the driver,
    a fresh process here, selects on its CPU stand-in and never initialises CUDA, so a GPU in
    exclusive-process mode is left to the tasks."""
    import subprocess
    import sys

    script = (
        "import json, sys, torch\n"
        "from seqpoint.executors import SubmititExecutor\n"
        "from seqpoint.workflows import Campaign, RunConfig\n"
        "cfg = RunConfig.from_dict({'lengths': {'source': 'bundled:wikitext-2-valid', 'max_samples': 64},\n"
        "    'batching': {'policy': 'fixed', 'params': {'batch_size': 8}}, 'selection': {'n_points': 2},\n"
        "    'workload': {'name': 'bert:tiny', 'set': {'device': 'cuda', 'threads': 1}},\n"
        "    'profile': {'metrics': ['time'], 'use_cache': False, 'warmup': 1, 'repeats': 2}})\n"
        "c = Campaign(cfg, executor=SubmititExecutor(folder=sys.argv[1]))\n"
        "ms = c.measure_seqpoints()\n"
        "print(json.dumps({'ok': sum(m.ok for m in ms.measurements), 'device': ms.environment.get('device_type'),\n"
        "                  'context': torch.cuda.is_initialized()}))\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "jobs")], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"ok": 2, "device": "cuda", "context": False}, done.stderr[-2000:]
