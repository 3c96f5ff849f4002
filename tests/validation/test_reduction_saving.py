"""The profiling saving in steps, wall clock and tokens, on hand-computed inputs."""

from __future__ import annotations

import math

import pytest

from seqpoint.validation import profiling_saving, reduction_factor


def test_saving_in_steps_wall_clock_and_tokens() -> None:
    run_tokens = [100] * 8 + [400] * 2  # 10 iterations, 1,600 tokens
    s = profiling_saving(run_tokens, [100, 400], warmup=2, repeats=3, run_s=20.0,
                         point_step_s=[0.5, 2.0], point_first_s=[1.0, float("nan")])
    assert s.steps == reduction_factor(10, 2, warmup=2, repeats=3) == 1.0
    # point 1: cold first step 1.0 + 4 steps of 0.5; point 2: 5 steps of 2.0
    assert s.profiling_s == pytest.approx(3.0 + 10.0)
    assert s.wall_clock == pytest.approx(20.0 / 13.0)
    assert s.tokens == pytest.approx(1600 / (5 * 500))
    assert s.to_dict()["run_s"] == 20.0


def test_long_points_make_the_wall_clock_saving_smaller_than_the_step_count() -> None:
    run = [10] * 990 + [1000] * 10
    s = profiling_saving(run, [10, 1000], warmup=1, repeats=4, run_s=990 * 0.01 + 10 * 1.0,
                         point_step_s=[0.01, 1.0])
    assert s.steps == pytest.approx(100.0)
    assert s.wall_clock < s.steps / 10
    assert s.tokens < s.steps / 10


def test_without_time_only_steps_and_tokens() -> None:
    s = profiling_saving([5, 5], [5], warmup=0, repeats=1)
    assert s.steps == 2.0 and s.tokens == 2.0
    assert math.isnan(s.wall_clock) and math.isnan(s.profiling_s)
