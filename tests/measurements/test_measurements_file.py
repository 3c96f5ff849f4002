"""MEASUREMENTS.json: round trips, and one InputError line for every kind of bad file."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seqpoint.exceptions import InputError
from seqpoint.measurements import (
    Measurement,
    Measurements,
    parse_measurement,
    read_measurements,
    write_measurements,
)


def good() -> dict[str, Any]:
    return {
        "workload": "deepspeech2:tiny",
        "config": {"hidden": 8},
        "environment": {"torch": "2.5"},
        "measurements": [
            {"iteration": 17, "batch_size": 32, "seq_len": 411, "tgt_len": 0, "status": "ok",
             "metrics": {"time_s": 0.123, "time_s_iqr": 0.002, "flops": 1.2e9},
             "breakdown_s": {"gemm": 0.05}, "samples": {"time_s": [0.12, 0.13]}},
            {"iteration": 40, "batch_size": 32, "seq_len": 100, "status": "ok",
             "metrics": {"time_s": 0.05, "flops": 3e8}},
            {"iteration": 90, "batch_size": 32, "seq_len": 900, "status": "oom", "message": "CUDA OOM"},
        ],
    }


def test_round_trip(tmp_path: Path) -> None:
    ms = Measurements(
        workload="w", config={"a": 1}, environment={"b": "c"},
        measurements=(
            Measurement(iteration=3, batch_size=2, seq_len=5, tgt_len=1, sum_sq_len=50,
                        metrics={"time_s": 0.5}, breakdown_s={"gemm": 0.2}, samples={"time_s": [0.4, 0.6]}),
            Measurement(iteration=4, batch_size=2, seq_len=7, status="error", message="boom"),
        ),
    )
    assert read_measurements(write_measurements(ms, tmp_path / "m.json")) == ms


def test_a_count_round_trips_under_its_own_names(tmp_path: Path) -> None:
    ms = Measurements(workload="w", config={"timer": "instructions"}, measurements=(
        Measurement(iteration=3, batch_size=2, seq_len=5,
                    metrics={"instructions": 7288123.0, "instructions_first": 11810000.0, "repeats": 2.0},
                    samples={"instructions": [7288123.0, 7285001.0], "instructions_processes": [7288123.0]}),))
    path = write_measurements(ms, tmp_path / "m.json")
    assert read_measurements(path) == ms
    assert "time_s" not in path.read_text()


def test_contract_example_reads(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(good()))
    ms = read_measurements(path)
    assert [m.status for m in ms.measurements] == ["ok", "ok", "oom"]
    assert ms.measurements[1].tgt_len == 0 and ms.measurements[0].metrics["flops"] == 1.2e9


def with_point(index: int, **change: Any) -> dict[str, Any]:
    data = good()
    data["measurements"][index].update(change)
    return data


BAD: list[tuple[str, Any, str]] = [
    ("top is a list", [], r"top level: must be an object"),
    ("measurements of strings", {**good(), "measurements": ["x"]}, r"measurements\.0: must be an object"),
    ("metrics a list", with_point(0, metrics=[]), r"measurements\.0\.metrics: must be an object"),
    ("no workload", {k: v for k, v in good().items() if k != "workload"}, r"workload: is required but missing"),
    ("batch size float", with_point(0, batch_size=1.5), r"measurements\.0\.batch_size: must be an integer \(got 1\.5\)"),
    ("batch size bool", with_point(0, batch_size=True), r"measurements\.0\.batch_size: must be an integer"),
    ("batch size string", with_point(0, batch_size="32"), r"batch_size: must be an integer"),
    ("batch size zero", with_point(0, batch_size=0), r"batch_size: must be >= 1 \(got 0\)"),
    ("seq len huge", with_point(0, seq_len=2**40), r"seq_len: must be <= 2147483647"),
    ("unknown status", with_point(2, status="failed"), r"measurements\.2\.status: Input should be 'ok', 'oom' or 'error'"),
    ("negative metric", with_point(0, metrics={"time_s": -1.0, "flops": 1.0}), r"metrics\.time_s: must be >= 0"),
    ("string metric", with_point(1, metrics={"time_s": "1", "flops": 1.0}), r"metrics\.time_s: must be a number"),
    ("negative breakdown", with_point(0, breakdown_s={"gemm": -0.1}), r"breakdown_s\.gemm"),
    ("unknown field", with_point(0, weight=3), r"measurements\.0\.weight: is not a known field"),
    ("metric missing at one point", with_point(1, metrics={"time_s": 0.05}),
     r"metric 'flops' is missing at point 1 \(iteration 40\).*profile that point again"),
]


@pytest.mark.parametrize(("data", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_files_are_one_line(data: Any, message: str, read_error: Callable[..., str]) -> None:
    text = read_error(read_measurements, data, message)
    assert "seqpoint profile" in text or "profile that point again" in text


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{", r"line 1: invalid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, r"nested too deeply"),
        (b'{"workload": "w", "measurements": [], "x": NaN}', r"NaN is not a number"),
        (b'{"workload": "w", "measurements": [{"batch_size": 1, "seq_len": 2, "metrics": {"time_s": 1e400}}]}',
         r"measurements\.0\.metrics\.time_s: must be a finite number \(got inf\)"),
        (b'{"workload": "w", "measurements": [{"batch_size": 1' + b"0" * 5000 + b"}]}", r"invalid JSON"),
        (gzip.compress(b'{"workload": "w"}', mtime=0), r"must be UTF-8 text; this is a gzip-compressed file"),
        ('{"workload": "w"}'.encode("utf-16"), r"must be UTF-8 text; this is UTF-16 text"),
        (b"\x00\xff\xfe binary", r"must be UTF-8 text"),
    ],
)
def test_undecodable_files_are_one_line(raw: bytes, message: str, read_error: Callable[..., str]) -> None:
    read_error(read_measurements, raw, message)


def test_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"does not exist; create it with 'seqpoint profile'"):
        read_measurements(tmp_path / "nope.json")
    with pytest.raises(InputError, match=r"is a folder; give the file"):
        read_measurements(tmp_path)


def test_parse_measurement_names_the_source() -> None:
    m = parse_measurement('{"batch_size": 2, "seq_len": 3, "metrics": {"time_s": 1}}', source="row k", fix="clear it")
    assert m.metrics == {"time_s": 1.0}
    with pytest.raises(InputError, match=r"^row k: line 1: invalid JSON"):
        parse_measurement("{not json", source="row k", fix="clear it")
    with pytest.raises(InputError, match=r"^row k: status: .*; clear it$"):
        parse_measurement({"batch_size": 2, "seq_len": 3, "status": 1}, source="row k", fix="clear it")
