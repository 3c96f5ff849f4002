"""validate_trace and speedup_from_files on run traces recorded from a real tiny loop."""

from __future__ import annotations

import json

import numpy as np
import pytest

from seqpoint.exceptions import InputError
from seqpoint.integrations import record
from seqpoint.measurements import write_measurements
from seqpoint.schedule import read_trace
from seqpoint.selection import SeqPointSelector, write_seqpoints
from seqpoint.workflows import speedup_from_files, validate_trace

torch = pytest.importorskip("torch")

LENGTHS = [12, 40, 12, 24, 40, 24, 12, 40, 24, 12, 40, 12, 24, 24, 40, 12]


class TinyLM:
    """A one-layer model trained on token ids: the user's plain loop, as a workload too."""

    name = "tiny-lm"

    def __init__(self, width: int = 32) -> None:
        torch.manual_seed(0)
        self.model = torch.nn.Sequential(torch.nn.Embedding(50, width), torch.nn.Linear(width, 50))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.config = {"width": width}

    def make_batch(self, signature):
        gen = torch.Generator().manual_seed(int(signature[1]))
        return torch.randint(0, 50, (int(signature[0]), int(signature[1])), generator=gen)

    def step(self, batch) -> float:
        logits = self.model(batch)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 50), batch.reshape(-1))
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return float(loss.detach())


def _record(path, lengths=LENGTHS):
    torch.set_num_threads(1)
    job = TinyLM()
    with record(path) as rec:
        for n in lengths:
            batch = job.make_batch((4, n, 0))
            with rec.step(batch):
                job.step(batch)
    return read_trace(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from seqpoint.profiling import ProfileConfig, profile_points

    tmp = tmp_path_factory.mktemp("traces")
    a, b = _record(tmp / "a.csv"), _record(tmp / "b.csv")
    schedule = a.to_schedule()
    points = SeqPointSelector(n_points=3).fit(schedule).to_seqpoints(schedule)
    meas = profile_points(TinyLM(), points, ProfileConfig(warmup=1, repeats=3), progress=False)
    return tmp, a, b, schedule, points, meas


def test_projection_first_n_and_noise_floor_against_two_recorded_runs(runs) -> None:
    _, a, b, _, points, meas = runs
    res = validate_trace(a, points, meas, [a, b], first_n=4)
    assert res.n_iterations == res.n_steps == len(LENGTHS)
    assert res.measured_runs_s == (a.total_time_s, b.total_time_s)
    assert res.truth.noise_floor == pytest.approx(abs(a.total_time_s - b.total_time_s) / res.truth.measured_s)
    assert res.first_n_s == pytest.approx(a.step_times_s()[:4].mean() * len(LENGTHS))
    assert res.truth.projected_s > 0 and np.isfinite(res.truth.error) and np.isfinite(res.first_n_error)
    out = json.loads(json.dumps(res.to_dict()))
    assert out["n_points"] == 3 and out["first_n"] == 4
    assert set(out) >= {"projected_s", "measured_s", "noise_floor", "error", "first_n_error", "interval_s"}


def test_one_trace_file_has_no_noise_floor(runs) -> None:
    tmp, _, _, schedule, points, meas = runs
    res = validate_trace(schedule, points, meas, tmp / "a.csv")
    assert np.isnan(res.truth.noise_floor) and np.isnan(res.to_dict()["noise_floor"])
    assert res.first_n == 10


def test_a_trace_of_another_schedule_is_one_clear_error(runs, tmp_path) -> None:
    _, a, _, _, points, meas = runs
    other = _record(tmp_path / "c.csv", [*LENGTHS[:5], 16, *LENGTHS[6:]])
    with pytest.raises(InputError, match="Trace 2 of 2 is not a run of this schedule: micro-batch 5 has seq_len 16"):
        validate_trace(a, points, meas, [a, other])
    shorter = _record(tmp_path / "d.csv", LENGTHS[:8])
    with pytest.raises(InputError, match="has 8 micro-batches but the schedule has 16"):
        validate_trace(a, points, meas, shorter)
    with pytest.raises(InputError, match="'first_n' parameter of validate_trace must be an int >= 1"):
        validate_trace(a, points, meas, a, first_n=0)
    # a SeqPointCallback's trace before train() has ended
    with pytest.raises(InputError, match=r"got no run trace \(None\).*until trainer.train\(\) has ended"):
        validate_trace(a, points, meas, None)


def test_speedup_from_two_measurement_files(runs, tmp_path) -> None:
    from seqpoint.profiling import ProfileConfig, profile_points

    tmp, _, _, schedule, points, meas = runs
    wide = profile_points(TinyLM(width=256), points, ProfileConfig(warmup=1, repeats=3), progress=False)
    write_seqpoints(points, tmp_path / "sp.json")
    write_measurements(meas, tmp_path / "a.json")
    write_measurements(wide, tmp_path / "b.json")
    sp = speedup_from_files(tmp / "a.csv", tmp_path / "sp.json", tmp_path / "a.json", tmp_path / "b.json")
    assert sp.total_a > 0 and sp.total_b > 0
    assert sp.value == pytest.approx(sp.total_a / sp.total_b)
    again = speedup_from_files(schedule, points, meas, wide)
    assert again.value == pytest.approx(sp.value)


def test_speedup_needs_both_sets_on_the_seqpoints(runs) -> None:
    import dataclasses

    _, _, _, schedule, points, meas = runs
    partial = dataclasses.replace(meas, measurements=meas.measurements[:1])
    with pytest.raises(InputError, match=r"Measurements B \(in memory\) lack SeqPoint iteration"):
        speedup_from_files(schedule, points, meas, partial)


def test_speedup_from_files_names_the_files_that_disagree(runs, tmp_path) -> None:
    import dataclasses

    from seqpoint.measurements import write_measurements
    from seqpoint.schedule import write_schedule
    from seqpoint.selection import write_seqpoints

    _, _, _, schedule, points, meas = runs
    sched_file = write_schedule(schedule.head(len(schedule) - 1), tmp_path / "short.csv")
    sp_file = write_seqpoints(points, tmp_path / "sp.json")
    with pytest.raises(InputError, match=rf"{sp_file} does not fit {sched_file}\. The SeqPoints were chosen"):
        speedup_from_files(sched_file, sp_file, meas, meas)
    partial = write_measurements(dataclasses.replace(meas, measurements=meas.measurements[:1]), tmp_path / "b.json")
    with pytest.raises(InputError, match=rf"Measurements B \({partial}\) lack SeqPoint iteration\(s\) .* of {sp_file}"):
        speedup_from_files(schedule, sp_file, meas, partial)


def test_a_window_in_the_measurements_measures_the_in_run_gap(runs) -> None:
    import dataclasses

    from seqpoint.measurements import StepWindow

    _, a, b, schedule, points, meas = runs
    plain = validate_trace(a, points, meas, [a, b])
    assert plain.window is None and plain.projection.cold_term["method"] == "first_step"
    sigs = [tuple(int(v) for v in row) for row in schedule.signature_matrix()[:6]]
    steps = {m.signature: m.metrics["time_s"] for m in meas.measurements}
    # The run's first six micro-batches: a new shape costs twice a known one, 10% over its projection.
    seen: set[tuple[int, ...]] = set()
    times = []
    for sig in sigs:
        base = steps.get(sig, min(steps.values()))
        times.append(1.1 * base * (1.0 if sig in seen else 1.0 + plain.projection.cold_term["relative_extra"]))
        seen.add(sig)
    window = StepWindow(start=0, signatures=tuple(sigs), times_s=tuple(times))
    res = validate_trace(a, points, dataclasses.replace(meas, window=window), [a, b])
    assert res.window is window and res.projection.cold_term["method"] == "first_step"
    out = json.loads(json.dumps(res.to_dict()))
    assert out["window"]["times_s"] == pytest.approx(times)
    assert out["projection"]["in_run_ratio"] == pytest.approx(1.1, rel=0.02)
    assert res.truth.projected_s == pytest.approx(plain.truth.projected_s)  # counted in the interval, not applied
    lo, hi = res.truth.interval_s
    plo, phi = plain.truth.interval_s
    assert lo <= plo and hi > phi  # the low end may be cut at 0


def test_validate_against_traces_refuses_what_only_full_runs_compute(tmp_path) -> None:
    from seqpoint.exceptions import ConfigError
    from seqpoint.workflows import RunConfig, validate

    for given in ({"exact": False}, {"ks": (1, 2)}):
        with pytest.raises(ConfigError, match=r"validate\(traces=\.\.\.\) .* leave out ks and exact"):
            validate(RunConfig(), traces=[tmp_path / "run.csv"], **given)  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match=r"validate\(first_n=\.\.\.\) .* give traces=\.\.\."):
        validate(RunConfig(), first_n=5)  # type: ignore[call-overload]
