"""Data-parallel projection: max over ranks plus the all-reduce, exact on hand-built runs."""

from __future__ import annotations

import numpy as np
import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.measurements import Measurements
from seqpoint.projection import (
    INTERCONNECTS,
    project_ranks,
)
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints, SeqPointSelector
from seqpoint.testing import toy_measurements


def rank_schedule() -> IterationSchedule:
    # 3 steps x 2 ranks; rank rows step-major.
    seq = [10, 30, 20, 20, 50, 10]
    base = IterationSchedule.from_columns({"batch_size": [2] * 6, "seq_len": seq,
                                           "iteration": [0, 0, 1, 1, 2, 2]})
    return IterationSchedule(**base.columns(), rank=np.array([0, 1, 0, 1, 0, 1]))


def cost(p_seq: int) -> float:
    return 0.1 * p_seq  # seconds per step of a rank with this seq_len


def every_signature(flat: IterationSchedule) -> tuple[SeqPoints, Measurements]:
    n_sig = len(flat.unique_signatures()[1])
    points = SeqPointSelector(n_points=n_sig).fit(flat).to_seqpoints(flat)
    return points, toy_measurements(points, lambda p: cost(p.seq_len), time_s_iqr=lambda p: 0.0)


def test_max_over_ranks_is_exact_on_a_hand_built_run() -> None:
    sched = rank_schedule()
    points, ms = every_signature(sched.rank_rows())
    proj = project_ranks(sched, points, ms, allreduce_s=0.5)
    # Steps: max(1, 3) + max(2, 2) + max(5, 1) = 3 + 2 + 5; mean: 2 + 2 + 3.
    assert proj.compute_s == pytest.approx(10.0)
    assert proj.mean_compute_s == pytest.approx(7.0)
    assert proj.total_s == pytest.approx(10.0 + 3 * 0.5)
    assert proj.straggler_share == pytest.approx(3.0 / 11.5)
    assert proj.communication_share == pytest.approx(1.5 / 11.5)
    d = proj.to_dict()
    assert d["world_size"] == 2 and d["n_steps"] == 3 and d["allreduce_source"] == "measured"


def test_the_run_waits_for_the_slowest_rank_of_every_step() -> None:
    # The ranks' steps cost 1|3, 2|2 and 5|1 s.
    sched = rank_schedule()
    points, ms = every_signature(sched.rank_rows())
    proj = project_ranks(sched, points, ms, allreduce_s=0.0)
    assert (proj.compute_s, proj.mean_compute_s) == (pytest.approx(10.0), pytest.approx(7.0))


def one_step(world_size: int) -> IterationSchedule:
    base = IterationSchedule.from_columns({"batch_size": [2] * world_size, "seq_len": [10] * world_size,
                                           "iteration": [0] * world_size})
    return IterationSchedule(**base.columns(), rank=np.arange(world_size))


def allreduce_s(world_size: int, gradient_bytes: int, interconnect: str | float) -> float:
    sched = one_step(world_size)
    points, ms = every_signature(sched.rank_rows())
    return project_ranks(sched, points, ms, gradient_bytes=gradient_bytes, interconnect=interconnect).allreduce_s


def test_ring_allreduce_over_a_named_interconnect() -> None:
    assert allreduce_s(4, 1000, 1.0) == pytest.approx(1500.0)  # a ring sends 2 (n - 1) / n of the bytes
    assert allreduce_s(2, 10**9, "nvlink4") == pytest.approx(1e9 / INTERCONNECTS["nvlink4"])
    # NVLink 3 (A100): 300 GB/s each way, two thirds of NVLink 4's 450
    assert allreduce_s(2, 3 * 10**9, "nvlink3") == pytest.approx(0.01) == allreduce_s(2, 4.5e9, "nvlink4")
    assert allreduce_s(8, 10**9, 1e9) == pytest.approx(1.75)
    sched = rank_schedule()
    points, ms = every_signature(sched.rank_rows())
    proj = project_ranks(sched, points, ms, gradient_bytes=10**9, interconnect="pcie4")
    assert proj.allreduce_s == pytest.approx(1e9 / 25e9) and proj.allreduce_source == "pcie4"


def test_single_process_schedule_has_no_communication() -> None:
    flat = rank_schedule().rank_rows()
    points, ms = every_signature(flat)
    proj = project_ranks(flat, points, ms)
    assert proj.world_size == 1 and proj.communication_s == 0.0 and proj.straggler_share == 0.0
    assert proj.total_s == pytest.approx(sum(cost(s) for s in flat.seq_len.tolist()))


def test_bad_all_reduce_inputs_are_one_line() -> None:
    sched = rank_schedule()
    points, ms = every_signature(sched.rank_rows())
    with pytest.raises(ConfigError, match="needs the all-reduce time"):
        project_ranks(sched, points, ms)
    with pytest.raises(ConfigError, match="Unknown interconnect 'ethernet'; use one of gloo-loopback"):
        project_ranks(sched, points, ms, gradient_bytes=8, interconnect="ethernet")
    with pytest.raises(ConfigError, match="'interconnect' parameter must be a number > 0"):
        project_ranks(sched, points, ms, gradient_bytes=8, interconnect=-1.0)
    with pytest.raises(ConfigError, match="not both"):
        project_ranks(sched, points, ms, allreduce_s=1.0, interconnect="pcie4")
