"""The submitit executor with submitit's own local cluster (subprocess jobs, no Slurm, no
mocks): the same measurements and cache rows as the serial path."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

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


def test_a_driver_without_the_workloads_gpu_says_what_it_builds_here(tmp_path: Path) -> None:
    """A CUDA workload sent to tasks from a machine without a GPU (a Slurm login node): the default
    proxy counts the workload here, which cannot build it; the one line says why and what to set."""
    import torch

    from seqpoint.workflows import RunConfig, run

    if torch.cuda.is_available():
        pytest.skip("this driver has a GPU: the workload builds here")
    cfg = RunConfig.from_dict({
        "lengths": {"source": "bundled:wikitext-2-valid", "max_samples": 64},
        "batching": {"policy": "fixed", "params": {"batch_size": 8}}, "selection": {"n_points": 2},
        "workload": {"name": "bert:tiny", "set": {"device": "cuda"}},
        "report": {"out": str(tmp_path / "run"), "plots": False, "html": False}})
    with pytest.raises(ConfigError, match=r"torch sees no CUDA device.* The points are measured in submitit tasks, "
                                          r"but this process builds the workload too.*set proxy = \"attention\" and "
                                          r"cold_window = 0") as info:
        run(cfg, executor=SubmititExecutor(folder=tmp_path / "jobs"))
    assert "\n" not in str(info.value)
    # With what it says set, nothing is built here: the tasks' own probe is what fails on this CPU machine,
    # and the run folder's manifest names no GPU of this process.
    cfg = dataclasses.replace(cfg, selection=dataclasses.replace(cfg.selection, proxy="attention"))
    with pytest.raises(ConfigError, match="torch sees no CUDA device") as info:
        run(cfg, executor=SubmititExecutor(folder=tmp_path / "jobs"))
    assert "this process builds" not in str(info.value)
    manifest = json.loads((tmp_path / "run" / "environment.json").read_text())
    assert (manifest["device_type"], manifest["device"], manifest["cuda_available"]) == ("cuda", "none in this process",
                                                                                          False)
