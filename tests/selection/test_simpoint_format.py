"""SimPoint 3.0 ``.simpoints``/``.weights`` files, exact text."""

from __future__ import annotations

from seqpoint.selection import SeqPoint, SeqPoints, write_simpoints


def test_files_are_simpoints_format_by_hand(tmp_path) -> None:
    """The ``tiny`` schedule's three groups: 10 ×3 (at 1), 20 ×2 (at 3), 30/100 ×3 (at 6)."""
    points = SeqPoints(method="seqpoint", n_iterations=8, points=(
        SeqPoint(iteration=1, batch_size=1, seq_len=10, weight=3),
        SeqPoint(iteration=3, batch_size=1, seq_len=20, weight=2),
        SeqPoint(iteration=6, batch_size=1, seq_len=100, weight=3),
    ))
    sp, w = write_simpoints(points, tmp_path / "run")
    assert (sp.name, w.name) == ("run.simpoints", "run.weights")
    assert sp.read_text() == "1 0\n3 1\n6 2\n"
    assert w.read_text() == "0.375 0\n0.25 1\n0.375 2\n"
