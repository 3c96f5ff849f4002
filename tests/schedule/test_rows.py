"""Per-row lengths: built from batches, kept by take(), saved beside the schedule file."""

from pathlib import Path

import numpy as np
import pytest

from seqpoint.batching import POLICIES, from_batch_sampler
from seqpoint.exceptions import InputError
from seqpoint.schedule import RowLengths, read_schedule, write_schedule


def rows_path(path: Path) -> Path:
    """The per-row lengths beside a schedule file: ``<file>.rows.npz`` (docs/user-workloads.md)."""
    return path.with_name(path.name + ".rows.npz")


def _sched():
    lengths = np.array([5, 9, 3, 7, 2, 8, 6, 4, 1, 10])
    return lengths, POLICIES.get("fixed")(batch_size=3).replay(lengths, epochs=2, seed=4)


def test_replayed_rows_are_the_batches_lengths_and_match_the_columns():
    _, s = _sched()
    assert len(s.rows) == len(s)
    for i in range(len(s)):
        src, tgt = s.rows.row(i)
        assert tgt is None and len(src) == s.batch_size[i]
        assert src.max() == s.seq_len[i] and src.sum() == s.tokens[i]
        assert int((src * src).sum()) == s.sum_sq_len[i]


def test_batch_sampler_rows_are_exactly_its_batches_and_targets():
    src = np.array([4, 1, 6, 2, 8])
    tgt = np.array([3, 3, 1, 5, 2])
    from seqpoint.traces import from_array

    s = from_batch_sampler([[2, 0], [4], [1, 3]], from_array(src, tgt=tgt))
    assert [s.rows.row(i)[0].tolist() for i in range(3)] == [[6, 4], [8], [1, 2]]
    assert [s.rows.row(i)[1].tolist() for i in range(3)] == [[1, 3], [2], [3, 5]]


def test_take_keeps_each_iterations_rows_in_the_order_asked():
    _, s = _sched()
    sub = s.take([4, 0, 2])
    for j, i in enumerate([4, 0, 2]):
        np.testing.assert_array_equal(sub.rows.row(j)[0], s.rows.row(i)[0])
    mask = s.epoch == 1
    np.testing.assert_array_equal(s.take(mask).rows.lengths,
                                  np.concatenate([s.rows.row(i)[0] for i in np.flatnonzero(mask)]))
    assert s.head(2).rows.n_iterations == 2


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_rows_round_trip_beside_the_file_and_a_stale_sidecar_is_removed(tmp_path, suffix):
    _, s = _sched()
    path = write_schedule(s, tmp_path / f"s{suffix}")
    assert rows_path(path).is_file()
    back = read_schedule(path)
    assert back.equals(s) and back.rows.equals(s.rows)
    write_schedule(s.with_rows(None), path)
    assert not rows_path(path).exists() and read_schedule(path).rows is None


def test_a_sidecar_of_another_schedule_is_one_clear_error(tmp_path):
    _, s = _sched()
    path = write_schedule(s, tmp_path / "s.csv")
    write_schedule(s.head(3), tmp_path / "other.csv")
    rows_path(path).write_bytes(rows_path(tmp_path / "other.csv").read_bytes())
    with pytest.raises(InputError, match=r"s\.csv\.rows\.npz covers 3 iterations .*delete"):
        read_schedule(path)
    rows_path(path).write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a per-row lengths file"):
        read_schedule(path)


@pytest.mark.parametrize("offsets, lengths, match", [
    ([1, 2], [3, 4], "start at 0"),
    ([0, 3], [3, 4], "end at the number"),
    ([0, 2, 1, 2], [3, 4], "never decrease"),
    ([0, 2], [3, -1], ">= 0"),
])
def test_bad_row_lengths_are_refused(offsets, lengths, match):
    with pytest.raises(InputError, match=match):
        RowLengths(np.array(offsets), np.array(lengths))


def test_rows_must_cover_the_schedule():
    _, s = _sched()
    with pytest.raises(InputError, match="per-row lengths cover 2 iterations"):
        s.with_rows(s.rows.take([0, 1]))


def test_row_of_is_kept_by_take_compared_and_checked():
    from seqpoint.schedule import RowLengths

    rows = RowLengths(np.array([0, 3, 5]), np.array([4, 4, 8, 2, 6]), row_of=np.array([0, 0, 1, 0, 0]))
    sub = rows.take([1, 0])
    assert sub.row_of.tolist() == [0, 0, 0, 0, 1] and sub.packed_row_of(1).tolist() == [0, 0, 1]
    assert not rows.equals(RowLengths(rows.offsets, rows.lengths))
    assert RowLengths(rows.offsets, rows.lengths).packed_row_of(0) is None
    with pytest.raises(InputError, match="non-decreasing within each iteration"):
        RowLengths(np.array([0, 3]), np.array([1, 2, 3]), row_of=np.array([1, 0, 0]))


def _edit_csv(path, line: int, column: str, value: int) -> None:
    """Set ``column`` on file line ``line`` (1 is the header) of a schedule CSV, and
    padded_tokens to match, as a careful hand edit would."""
    lines = path.read_text().splitlines()
    names = lines[0].split(",")
    cells = dict(zip(names, map(int, lines[line - 1].split(",")), strict=True))
    cells[column] = value
    cells["padded_tokens"] = cells["batch_size"] * (cells["seq_len"] + cells["tgt_len"])
    lines[line - 1] = ",".join(str(cells[n]) for n in names)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(("column", "value", "message"), [
    ("seq_len", 6, r"for line 3 it holds a sequence of 10 tokens, but the row's seq_len is 6"),
    ("batch_size", 2, r"for line 3 it holds 3 sequences, but the row's batch_size is 2"),
])
def test_a_schedule_edited_after_its_sidecar_is_refused(tmp_path, column, value, message):
    """The sidecar's lengths feed the steps (masks, varlen): a hand-edited seq_len or
    batch_size they no longer fit must not be profiled as if they did."""
    _, s = _sched()
    path = write_schedule(s, tmp_path / "s.csv")
    _edit_csv(path, 3, column, value)
    with pytest.raises(InputError, match=rf"s\.csv\.rows\.npz does not fit .*s\.csv: {message}\. Delete the sidecar"):
        read_schedule(path)
    rows_path(path).unlink()
    assert read_schedule(path).rows is None  # the edited schedule reads without it


def test_packed_and_data_parallel_sidecars_fit_their_schedules(tmp_path):
    lengths = np.random.default_rng(3).integers(1, 90, size=300)
    for policy, kw in (("packing", {"max_seq_len": 64, "batch_size": 3}),
                       ("fixed", {"batch_size": 4, "pad_to_multiple_of": 8}),
                       ("group_by_length", {"batch_size": 4})):
        for world_size in (1, 2):
            s = POLICIES.get(policy)(**kw).replay(lengths, epochs=2, seed=1, world_size=world_size)
            back = read_schedule(write_schedule(s, tmp_path / f"{policy}{world_size}.parquet"))
            assert back.rows is not None and back.rows.equals(s.rows)
    # Packed rows are filled to seq_len, so a schedule edit that the schema lets through
    # cannot shorten them; the check itself, on the arrays:
    p = POLICIES.get("packing")(max_seq_len=64, batch_size=3).replay(lengths, epochs=1, seed=1)
    assert p.rows.mismatch(p.batch_size, p.seq_len, None) is None
    assert p.rows.mismatch(p.batch_size, p.seq_len - 1, None) == (0, "a packed row of 64 tokens, "
                                                                     "but the row's seq_len is 63")
    assert p.rows.mismatch(p.batch_size - 1, p.seq_len, None) == (0, "3 packed rows, but the row's batch_size is 2")


def test_a_padding_free_row_of_documents_fits_its_one_row_batch():
    """A recorder sees padding-free packing (position_ids restarting at 0) as one row of
    batch_size 1 holding several documents, without row_of: they fit while their sum does."""
    rows = RowLengths.from_lists([[5, 3, 4], [7], [2, 2]])
    one, seq = np.array([1, 1, 1]), np.array([12, 7, 4])
    assert rows.mismatch(one, seq, None) is None
    assert rows.mismatch(one, np.array([12, 7, 3]), None) == (2, "documents of 4 tokens in all, but the row's seq_len is 3")
    # trailing rows without lengths: the last one with lengths keeps all of them
    assert RowLengths.from_lists([[3, 9, 4], []]).mismatch(np.array([3, 0]), np.array([8, 1]), None) == (
        0, "a sequence of 9 tokens, but the row's seq_len is 8")
