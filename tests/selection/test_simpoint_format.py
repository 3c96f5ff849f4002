"""SimPoint 3.0 ``.simpoints``/``.weights`` files: exact text, round trip, bad input."""

from __future__ import annotations

import pytest

from seqpoint.exceptions import InputError
from seqpoint.selection import (
    SeqPoint,
    SeqPoints,
    read_simpoints,
    seqpoints_from_simpoints,
    write_simpoints,
)


@pytest.fixture
def points() -> SeqPoints:
    """The ``tiny`` schedule's three groups: 10 ×3 (at 1), 20 ×2 (at 3), 30/100 ×3 (at 6)."""
    return SeqPoints(method="seqpoint", n_iterations=8, points=(
        SeqPoint(iteration=1, batch_size=1, seq_len=10, weight=3),
        SeqPoint(iteration=3, batch_size=1, seq_len=20, weight=2),
        SeqPoint(iteration=6, batch_size=1, seq_len=100, weight=3),
    ))


def test_files_are_simpoints_format_by_hand(points, tmp_path) -> None:
    sp, w = write_simpoints(points, tmp_path / "run")
    assert (sp.name, w.name) == ("run.simpoints", "run.weights")
    assert sp.read_text() == "1 0\n3 1\n6 2\n"
    assert w.read_text() == "0.375 0\n0.25 1\n0.375 2\n"


def test_round_trip(points, tmp_path, tiny) -> None:
    write_simpoints(points, tmp_path / "run")
    files = read_simpoints(tmp_path / "run")
    assert files.intervals == (1, 3, 6)
    assert files.weights == (0.375, 0.25, 0.375)
    back = seqpoints_from_simpoints(tmp_path / "run", tiny)
    assert [p.to_dict() for p in back.points] == [p.to_dict() for p in points.points]


def test_reads_simpoint_written_files_in_any_line_order(tmp_path, tiny) -> None:
    (tmp_path / "x.simpoints").write_text("6 1\n1 0\n")
    (tmp_path / "x.weights").write_text("0.3 1\n0.7 0\n")
    files = read_simpoints(tmp_path / "x")
    assert files.intervals == (1, 6) and files.weights == (0.7, 0.3)
    back = seqpoints_from_simpoints(tmp_path / "x", tiny)
    assert [p.weight for p in back.points] == pytest.approx([5.6, 2.4])


@pytest.mark.parametrize(("simpoints", "weights", "match"), [
    ("1 0\n3\n", "0.5 0\n0.5 1\n", r"x.simpoints: line 2: '3' is not '<interval> <cluster>'"),
    ("1 0\n3 1\n", "0.5 0\nhalf 1\n", r"line 2: 'half 1' is not '<weight> <cluster>'"),
    ("1 0\n3 1\n", "0.5 0\n0.5 2\n", "name different clusters"),
    ("1 0\n3 1\n", "0.5 0\n0.4 1\n", "sum to 0.9"),
    ("1 0\n1 0\n", "1 0\n", "cluster 0 appears twice"),
    ("", "", "is empty"),
])
def test_bad_files_name_the_line(tmp_path, simpoints, weights, match) -> None:
    (tmp_path / "x.simpoints").write_text(simpoints)
    (tmp_path / "x.weights").write_text(weights)
    with pytest.raises(InputError, match=match):
        read_simpoints(tmp_path / "x")


def test_missing_file_and_interval_past_the_schedule(points, tmp_path, tiny) -> None:
    with pytest.raises(InputError, match="does not exist"):
        read_simpoints(tmp_path / "nope")
    (tmp_path / "x.simpoints").write_text("9 0\n")
    (tmp_path / "x.weights").write_text("1.0 0\n")
    with pytest.raises(InputError, match="interval 9 but the schedule has 8 iterations"):
        seqpoints_from_simpoints(tmp_path / "x", tiny)
