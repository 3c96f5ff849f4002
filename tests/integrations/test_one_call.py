"""One call per integration: the projection with its interval, the break-even, and the check
against recorded runs with their noise floor (issue 32: the Trainer path in at most five
user lines, the noise floor without a config file)."""

import math

import numpy as np
import pytest
from test_huggingface import _recorded, _trainer

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


def test_project_trainer_against_two_recorded_runs_gives_the_noise_floor(hf, tmp_path):
    from seqpoint.integrations.huggingface import project_trainer

    trainer = _trainer(hf, tmp_path, dataset=hf.dataset(n=48))
    first = _recorded(trainer, tmp_path / "a").trace
    second = _recorded(trainer, tmp_path / "b").trace
    result = project_trainer(trainer, traces=[first, tmp_path / "b" / "trace.csv"], n_points=4)
    v = result.validation
    assert v is not None and len(v.truth.runs_s) == 2 and math.isfinite(v.truth.noise_floor)
    assert v.measured_runs_s == (first.total_time_s, second.total_time_s)
    assert len(result.schedule) == len(first.to_schedule()) and len(result.seqpoints) <= 4
    lo, hi = result.interval_s
    assert 0 <= lo <= result.projected_s <= hi  # a loaded machine's wide interval is cut at 0
    assert result.profiling_wall_s > 0 and result.break_even == pytest.approx(
        result.profiling_wall_s / result.projected_s * len(result.schedule))
    text = result.summary()
    for part in ("95% interval", "profiling took", "pays off on runs longer than", "noise floor", f"first {v.first_n} steps"):
        assert part in text
    assert result.to_dict()["validation"]["noise_floor"] == v.truth.noise_floor


def test_project_trainer_without_traces_replays_the_run(hf, tmp_path):
    from seqpoint.integrations.huggingface import project_trainer, schedule_from_trainer

    trainer = _trainer(hf, tmp_path, dataset=hf.dataset(n=32))
    result = project_trainer(trainer, n_points=3)
    assert result.validation is None and result.schedule.equals(schedule_from_trainer(trainer))
    assert "recorded runs" not in result.summary()


def test_project_job_for_a_plain_loop_and_a_file_workload(tmp_path):
    import torch

    from seqpoint.integrations import record
    from seqpoint.workflows import project_job

    rng = np.random.default_rng(0)
    batches = [rng.integers(4, 40, 4) for _ in range(12)]
    for run in ("a", "b"):
        with record(tmp_path / f"{run}.csv") as rec:
            for lengths in batches:
                mask = torch.tensor([[1] * n + [0] * (int(max(lengths)) - n) for n in lengths])
                with rec.step({"input_ids": mask.clone(), "attention_mask": mask}):
                    torch.ones(64, 64) @ torch.ones(64, 64)
    result = project_job(tmp_path / "a.csv", "examples/ctc_workload.py:CTCModel",
                         traces=[tmp_path / "a.csv", tmp_path / "b.csv"], n_points=3)
    assert result.validation is not None and len(result.validation.measured_runs_s) == 2
    assert result.seqpoints.points[0].lengths is not None  # the recorded per-row lengths reached the points


def test_project_job_takes_a_duck_typed_workload_whatever_its_name(tmp_path):
    """A workload is anything with name, config, make_batch and step: a built one's name is its
    own, never looked up among the registered workloads ("Unknown workload 'counting'" before)."""
    from seqpoint.testing import toy_schedule
    from seqpoint.workflows import project_job

    class Counting:
        name, config, steps = "counting", {}, 0

        def make_batch(self, signature):
            return signature

        def step(self, batch):
            self.steps += 1
            return float(sum(batch))

    wl = Counting()
    result = project_job(toy_schedule(), wl, n_points=2)
    assert wl.steps > 0 and result.projection.totals["time_s"] > 0
