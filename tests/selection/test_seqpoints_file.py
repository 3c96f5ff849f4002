"""SEQPOINTS.json: round trips, and one InputError line for every kind of bad file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seqpoint.selection import SeqPoint, SeqPoints, read_seqpoints, write_seqpoints


def good() -> dict[str, Any]:
    return {"method": "seqpoint", "n_iterations": 100,
            "points": [{"iteration": 17, "batch_size": 32, "seq_len": 411, "tgt_len": 0, "weight": 88},
                       {"iteration": 3, "batch_size": 32, "seq_len": 20, "weight": 12.0}]}


def with_point(index: int, **change: Any) -> dict[str, Any]:
    data = good()
    data["points"][index].update(change)
    return data


def test_round_trip(tmp_path: Path) -> None:
    sp = SeqPoints(method="first", n_iterations=10, meta={"estimated_error": 0.01},
                   points=(SeqPoint(iteration=0, batch_size=2, seq_len=5, weight=4.0),
                           SeqPoint(iteration=4, batch_size=2, seq_len=5, tgt_len=3, sum_sq_len=40, weight=6.0)))
    assert read_seqpoints(write_seqpoints(sp, tmp_path / "sp.json")) == sp


def test_contract_example_reads(tmp_path: Path) -> None:
    path = tmp_path / "sp.json"
    path.write_text(json.dumps(good()))
    sp = read_seqpoints(path)
    assert sp.n_iterations == 100 and [p.weight for p in sp.points] == [88.0, 12.0]


BAD: list[tuple[str, Any, str]] = [
    ("top is a list", [1], r"top level: must be an object"),
    ("points of strings", {**good(), "points": ["x"]}, r"points\.0: must be an object"),
    ("no points", {**good(), "points": []}, r"points: must have at least 1 item"),
    ("n_iterations inf-like float", {**good(), "n_iterations": 100.0}, r"n_iterations: must be an integer \(got 100\.0\)"),
    ("n_iterations bool", {**good(), "n_iterations": True}, r"n_iterations: must be an integer"),
    ("batch size 1.5", with_point(0, batch_size=1.5), r"points\.0\.batch_size: must be an integer \(got 1\.5\)"),
    ("batch size string", with_point(1, batch_size="1_9"), r"points\.1\.batch_size: must be an integer"),
    ("seq len zero", with_point(0, seq_len=0), r"points\.0\.seq_len: must be >= 1"),
    ("seq len 2^62", with_point(0, seq_len=2**62), r"points\.0\.seq_len: must be <= 2147483647"),
    ("negative weight", with_point(1, weight=-12), r"points\.1\.weight: must be >= 0"),
    ("weight string", with_point(1, weight="12"), r"points\.1\.weight: must be a number"),
    ("weights off", with_point(1, weight=11), r"top level: SeqPoint weights sum to 99 but n_iterations is 100"),
    ("typo field", with_point(0, wieght=1), r"points\.0\.wieght: is not a known field"),
    ("no n_iterations", {k: v for k, v in good().items() if k != "n_iterations"}, r"n_iterations: is required"),
]


@pytest.mark.parametrize(("data", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_files_are_one_line(data: Any, message: str, read_error: Callable[..., str]) -> None:
    assert read_error(read_seqpoints, data, message).endswith("create it again with 'seqpoint select'")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"n_iterations": 1e400, "points": []}', r"n_iterations: must be an integer \(got inf\)"),
        (b'{"n_iterations": Infinity}', r"Infinity is not a number"),
        (b"[" * 50_000, r"nested too deeply|invalid JSON"),
        (b"\x1f\x8b\x08\x00junk", r"gzip-compressed"),
    ],
)
def test_undecodable_files_are_one_line(raw: bytes, message: str, read_error: Callable[..., str]) -> None:
    read_error(read_seqpoints, raw, message)
