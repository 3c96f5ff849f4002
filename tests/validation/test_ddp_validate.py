"""The DDP validation end to end on a tiny 2-rank run: projected against measured."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console

from seqpoint.exceptions import ConfigError
from seqpoint.projection import project
from seqpoint.reports import print_projection
from seqpoint.workflows import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    RunConfig,
    SelectionSection,
    ValidationSection,
    WorkloadSection,
    ddp_schedule,
    validate_ddp,
)

pytest.importorskip("torch")


def _cfg(tmp_path, world_size: int = 2) -> RunConfig:
    return RunConfig(
        name="ddp",
        lengths=LengthsSection(source="bundled:librispeech-dev-clean", max_samples=64),
        batching=BatchingSection(policy="fixed", params={"batch_size": 4}, world_size=world_size, seed=2),
        selection=SelectionSection(n_points=4),
        workload=WorkloadSection(name="deepspeech2:tiny", set={"threads": 1}),
        # CPU time on both sides: this machine is shared, and wall time under load is not.
        profile=ProfileSection(warmup=2, repeats=5, timer="cpu", cache=str(tmp_path / "cache.sqlite")),
        validation=ValidationSection(max_iterations=6),
    )


def test_projected_ddp_run_is_close_to_the_measured_one(tmp_path) -> None:
    res = validate_ddp(_cfg(tmp_path), runs=2)
    sched = res.schedule
    assert sched.world_size == 2 and sched.n_steps == 6
    assert res.ddp.rank_s.shape == (2, 2, 6)
    # Deterministic parts: the ranks ran exactly the schedule's rows.
    for r in range(2):
        assert sched.for_rank(r).batch_size.tolist() == [4] * 6
    assert res.projection.n_steps == 6 and res.projection.allreduce_source == "measured"
    assert res.projection.allreduce_s == pytest.approx(res.ddp.sync_s)
    assert 0 <= res.projection.straggler_share < 1 and 0 <= res.projection.communication_share < 1
    # Measured time on a loaded 2-core machine, where the two ranks also share the cores
    # with other jobs (and slow each other down): a generous bound; bench_ddp.py gives
    # the figure on a quiet machine.
    assert abs(res.truth.error) < 0.5, res.to_dict()
    d = res.to_dict()
    assert d["data_parallel"]["world_size"] == 2 and len(d["measured"]["totals_s"]) == 2
    assert np.isfinite(d["noise_floor"])
    console = Console(record=True, width=200)
    print_projection(console, project(sched.rank_rows(), res.seqpoints, res.measurements), res.projection)
    text = console.export_text()
    assert "data-parallel run: 2 ranks, 6 steps" in text and "straggler wait (max - mean)" in text


def test_ddp_validation_needs_two_ranks(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"needs \[batching\] world_size >= 2 \(got 1\)"):
        ddp_schedule(_cfg(tmp_path, world_size=1))


def test_rank_beyond_world_size_in_the_config_is_one_line() -> None:
    with pytest.raises(ConfigError, match=r"\[batching\]: rank = 2 is not below world_size = 2"):
        BatchingSection(policy="fixed", world_size=2, rank=2)
    with pytest.raises(ConfigError, match="world_size"):
        BatchingSection(policy="fixed", world_size=0)


def test_a_gpu_workload_is_refused_before_anything_runs(tmp_path) -> None:
    """Audit row 20: the ranks are gloo CPU processes; a CUDA workload's ranks would share cuda:0
    and time a CPU all-reduce. Refused by name, before profiling (which would run on the GPU)."""
    import dataclasses

    from seqpoint.validation import run_ddp

    cfg = _cfg(tmp_path)
    cfg = dataclasses.replace(cfg, workload=WorkloadSection(name="deepspeech2:tiny", set={"device": "cuda:0"}),
                              profile=dataclasses.replace(cfg.profile, timer="wall"))
    with pytest.raises(ConfigError, match=r"gloo processes on the CPU, and deepspeech2:tiny runs on cuda:0"):
        validate_ddp(cfg)
    with pytest.raises(ConfigError, match="runs on cuda"):
        run_ddp("gnmt:tiny", {"device": "cuda"}, [[(2, 8, 8)], [(2, 8, 8)]])
