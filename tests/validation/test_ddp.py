"""The data-parallel ground truth on a tiny run: 2 gloo processes, 3 iterations."""

from __future__ import annotations

import numpy as np
import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.validation import DDPRun, run_ddp

pytest.importorskip("torch")

SCHEDULE = [
    [(2, 20, 0), (2, 40, 0), (3, 24, 0)],  # rank 0
    [(2, 36, 0), (2, 18, 0), (3, 30, 0)],  # rank 1
]


def test_ddp_run_times_every_rank_and_the_allreduce() -> None:
    run = run_ddp("deepspeech2:tiny", {}, SCHEDULE, runs=2, warmup=1, allreduce_repeats=3)
    assert run.rank_s.shape == (2, 2, 3)
    assert run.world_size == 2
    assert np.all(run.rank_s > 0)
    np.testing.assert_array_equal(run.iteration_s, run.rank_s.max(axis=1))
    assert run.total_s == pytest.approx(run.iteration_s.sum(axis=1).mean())
    assert run.gradient_bytes > 0 and run.allreduce_s > 0
    assert run.noise_floor >= 0
    assert run.to_dict()["n_iterations"] == 3


def test_step_time_is_the_slowest_rank() -> None:
    rank_s = np.array([[[1.0, 4.0], [3.0, 2.0]]])
    run = DDPRun(rank_s=rank_s, allreduce_s=0.1, gradient_bytes=8, wall_s=np.array([7.0]))
    np.testing.assert_array_equal(run.iteration_s, [[3.0, 4.0]])
    assert run.total_s == 7.0
    assert np.isnan(run.noise_floor)


def test_ranks_must_agree_on_the_iteration_count() -> None:
    with pytest.raises(ConfigError, match=r"same number of iterations. Got \[2, 1\]"):
        run_ddp("deepspeech2:tiny", {}, [[(1, 8, 0), (1, 9, 0)], [(1, 8, 0)]])
    with pytest.raises(ConfigError, match="at least one rank with at least one iteration"):
        run_ddp("deepspeech2:tiny", {}, [])


def test_a_failing_rank_is_one_line() -> None:
    """A rank's bad input is the caller's one-line ConfigError (without torch.distributed's
    ``[rank1]:`` prefix), not a rank crash."""
    with pytest.raises(ConfigError, match=r"^Unknown preset 'nope' of workload 'bert'"):
        run_ddp("bert:nope", {}, [[(1, 8, 0)], [(1, 8, 0)]], timeout_s=120)
    with pytest.raises(ConfigError, match=r"^Workload seqpoint_no_such_module:build: cannot import module"):
        run_ddp("seqpoint_no_such_module:build", {}, [[(1, 8, 0)], [(1, 8, 0)]], timeout_s=120)
