"""Per-process values, the campaign's protocol report and the step window in MEASUREMENTS.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seqpoint.exceptions import InputError
from seqpoint.measurements import (
    Measurement,
    Measurements,
    StepWindow,
    per_process_key,
    read_measurements,
    standard_error,
    write_measurements,
)
from seqpoint.projection import project
from seqpoint.testing import toy_measurements, toy_points, toy_schedule


def _m(per_process: list[float] | None) -> Measurement:
    samples = {"time_s": [1.0, 1.1, 0.9, 1.0]}
    if per_process is not None:
        samples[per_process_key("time_s")] = per_process
    return Measurement(iteration=3, batch_size=2, seq_len=8,
                       metrics={"time_s": 1.0, "time_s_sem": 0.1, "processes": 2.0}, samples=samples)


def test_process_spread_is_the_standard_error_when_larger() -> None:
    within = standard_error(_m(None), "time_s")
    assert within == pytest.approx(0.0816496580927726 / 2)
    # Two processes 20% apart: the between-process figure dominates.
    assert standard_error(_m([0.9, 1.1]), "time_s") == pytest.approx(0.1414213562373095 / 2**0.5)
    # Two processes that agree leave the within-process figure as the floor.
    assert standard_error(_m([1.0, 1.0]), "time_s") == pytest.approx(within)


def test_protocol_names_are_not_projected() -> None:
    schedule = toy_schedule()
    points = toy_points(schedule, [0, 6])
    ms = toy_measurements(points, time_s_sem=lambda p: 0.1, processes=lambda p: 2.0)
    assert set(project(schedule, points, ms).totals) == {"time_s"}


def test_protocol_and_window_round_trip(tmp_path: Path) -> None:
    window = StepWindow(start=5, signatures=((2, 8, 0), (2, 9, 0)), times_s=(0.5, 0.25))
    ms = Measurements(workload="bert:tiny", measurements=(_m([0.9, 1.1]),),
                      protocol={"processes": 2, "drift": [{"drift": 0.01}]}, window=window)
    path = write_measurements(ms, tmp_path / "m.json")
    back = read_measurements(path)
    assert back == ms


def test_serial_file_is_unchanged(tmp_path: Path) -> None:
    ms = Measurements(workload="bert:tiny", measurements=(_m(None),))
    assert set(ms.to_dict()) == {"workload", "config", "environment", "measurements"}


def test_bad_window_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="2 signatures but 1 times"):
        StepWindow(start=0, signatures=((2, 8, 0), (2, 9, 0)), times_s=(0.5,))
    data = Measurements(workload="w", measurements=(_m(None),)).to_dict()
    data["window"] = {"start": 0, "signatures": [[2, 8, 0]], "times_s": [0.1, 0.2]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="window"):
        read_measurements(path)
