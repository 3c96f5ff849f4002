"""SEQPOINTS.json entries carry each point's real per-sequence lengths when the schedule has them."""

import json

import numpy as np
import pytest

from seqpoint.batching import POLICIES
from seqpoint.exceptions import InputError
from seqpoint.selection import SELECTORS, read_seqpoints, write_seqpoints


def _points():
    lengths = np.random.default_rng(3).integers(5, 90, 400)
    s = POLICIES.get("bucket")(batch_size=8).replay(lengths, seed=1)
    return s, SELECTORS.get("seqpoint")(n_points=4).fit(s).to_seqpoints(s)


def test_points_record_the_rows_of_their_iteration_and_round_trip(tmp_path):
    s, pts = _points()
    for p in pts.points:
        row = int(np.flatnonzero(s.iteration == p.iteration)[0])
        assert p.lengths == tuple(s.rows.row(row)[0].tolist()) and p.tgt_lengths is None
    back = read_seqpoints(write_seqpoints(pts, tmp_path / "p.json"))
    assert back.points == pts.points


def test_files_without_lengths_stay_valid(tmp_path):
    s, pts = _points()
    data = pts.to_dict()
    for p in data["points"]:
        del p["lengths"]
    (tmp_path / "p.json").write_text(json.dumps(data))
    assert all(p.lengths is None for p in read_seqpoints(tmp_path / "p.json").points)
    plain = s.with_rows(None)
    assert "lengths" not in SELECTORS.get("first")(n_points=2).fit(plain).to_seqpoints(plain).to_dict()["points"][0]


@pytest.mark.parametrize("edit, match", [
    ({"lengths": [1, "2"]}, "lengths"),
    ({"lengths": [-1]}, r"points\.0\.lengths\.0: must be >= 0"),
    ({"lengths": [10**6]}, "exceeds seq_len"),
    ({"tgt_lengths": [3]}, "tgt_lengths needs lengths"),
])
def test_bad_lengths_are_one_clear_error(tmp_path, edit, match):
    _, pts = _points()
    data = pts.to_dict()
    data["points"][0].update(edit)
    (tmp_path / "p.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match=match):
        read_seqpoints(tmp_path / "p.json")


def test_packed_points_record_which_row_holds_each_document(tmp_path):
    lengths = np.random.default_rng(5).integers(5, 200, 600)
    s = POLICIES.get("packing")(max_seq_len=256, batch_size=4).replay(lengths, seed=0)
    pts = SELECTORS.get("seqpoint")(n_points=3).fit(s).to_seqpoints(s)
    for p in pts.points:
        row = int(np.flatnonzero(s.iteration == p.iteration)[0])
        assert p.row_of == tuple(s.rows.packed_row_of(row).tolist())
        assert len(p.row_of) == len(p.lengths) and max(p.row_of) < p.batch_size
    assert read_seqpoints(write_seqpoints(pts, tmp_path / "p.json")).points == pts.points
    data = pts.to_dict()
    data["points"][0]["row_of"] = [p + 99 for p in data["points"][0]["row_of"]]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="row_of"):
        read_seqpoints(tmp_path / "bad.json")
