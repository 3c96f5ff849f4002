"""``seqpoint run`` and ``seqpoint project`` on a data-parallel schedule: selection on the
rank rows, each step its slowest rank plus the all-reduce, and the one-line refusals."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from seqpoint.exceptions import ConfigError
from seqpoint.measurements import Measurement, Measurements, write_measurements
from seqpoint.projection import INTERCONNECTS, project
from seqpoint.schedule import read_schedule
from seqpoint.selection import read_seqpoints
from seqpoint.workflows import ProjectionSection, RunConfig, run

Cli = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture
def _cfg(bert_config) -> Callable[..., RunConfig]:
    def make(tmp_path: Path, **projection: object) -> RunConfig:
        return bert_config(tmp_path, "batching.world_size=2", name="ddp",
                           projection=ProjectionSection(**projection))  # type: ignore[arg-type]
    return make


def test_run_projects_slowest_rank_plus_allreduce(tmp_path: Path, _cfg) -> None:
    res = run(_cfg(tmp_path, interconnect="pcie4"))
    written = read_schedule(res.folder.file("schedule.csv"))
    assert written.world_size == 2 and written.rank is not None
    # Selection saw every rank's batch as an iteration of its own.
    assert len(res.schedule) == len(written) and res.schedule.rank is None
    dp = res.data_parallel
    assert dp is not None and dp.world_size == 2 and dp.n_steps == len(written) // 2
    # Balanced compute is half of all ranks' steady work (the interpolated model's, which
    # gives every rank row its own cost); the slowest rank is at least that.
    all_work = project(res.schedule, res.seqpoints, res.measurements, method="interpolated").totals["time_s"]
    assert dp.mean_compute_s == pytest.approx(all_work / 2, rel=1e-9)
    assert dp.compute_s >= dp.mean_compute_s
    assert dp.allreduce_source == "pcie4" and dp.allreduce_s > 0
    assert dp.total_s == pytest.approx(dp.compute_s + dp.n_steps * dp.allreduce_s)
    assert res.to_dict()["data_parallel"]["world_size"] == 2


def test_run_without_allreduce_is_refused_before_profiling(tmp_path: Path, _cfg) -> None:
    with pytest.raises(ConfigError, match=r"interconnect .* or allreduce_s"):
        run(_cfg(tmp_path))
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").rglob("measurements.json"))


def test_projection_section_checks_the_allreduce_keys(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown interconnect 'fibre'"):
        ProjectionSection(interconnect="fibre")
    with pytest.raises(ConfigError, match="not both"):
        ProjectionSection(interconnect="pcie4", allreduce_s=0.01)
    assert ProjectionSection(interconnect=2.5e10).interconnect == 2.5e10
    with pytest.raises(ConfigError, match=r"'method' parameter of \[projection\] must be one of 'weighted'"):
        ProjectionSection(method="mean")


def test_project_cli_on_a_rank_schedule(tmp_path: Path, cli: Cli) -> None:
    sched = tmp_path / "s.csv"
    code, _, err = cli(["schedule", "bundled:wikitext-2-valid", "--policy", "fixed", "--set",
                        "batching.params.batch_size=8", "--world-size", "2", "-o", str(sched)])
    assert code == 0, err
    sp = tmp_path / "sp.json"
    code, _, err = cli(["select", str(sched), "-k", "4", "-o", str(sp)])
    assert code == 0, err
    points = read_seqpoints(sp)
    ranked = read_schedule(sched)
    assert points.n_iterations == len(ranked)  # chosen among the rank rows
    # A made-up cost linear in tokens: the slowest rank of each step is then known exactly.
    ms = [Measurement(iteration=p.iteration, batch_size=p.batch_size, seq_len=p.seq_len,
                      metrics={"time_s": 1e-6 * p.batch_size * p.seq_len}) for p in points.points]
    meas = tmp_path / "m.json"
    write_measurements(Measurements(workload="t", measurements=tuple(ms)), meas)
    code, _, err = cli(["project", str(sched), str(sp), str(meas)])
    assert code == 2 and "--allreduce-s" in err and "Traceback" not in err
    code, out, err = cli(["project", str(sched), str(sp), str(meas), "--allreduce-s", "0.002", "--json"])
    assert code == 0, err
    dp = json.loads(out)["data_parallel"]
    assert dp["world_size"] == 2 and dp["allreduce_source"] == "measured"
    assert dp["communication_s"] == pytest.approx(0.002 * dp["n_steps"])
    code, out, err = cli(["project", str(sched), str(sp), str(meas), "--interconnect", "nvlink4",
                          "--gradient-bytes", "4000000"])
    assert code == 0 and "straggler wait" in out, err
    code, _, err = cli(["project", str(sched), str(sp), str(meas), "--interconnect", "smoke",
                        "--gradient-bytes", "4"])
    assert code == 2 and "[projection]: unknown interconnect 'smoke'" in err
    assert set(INTERCONNECTS) >= {"pcie4", "nvlink4"}
    assert np.all(ranked.rank[:2] == [0, 1])
