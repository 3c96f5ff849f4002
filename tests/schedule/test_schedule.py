import json

import numpy as np
import pytest

from seqpoint.exceptions import InputError
from seqpoint.schedule import (
    IterationSchedule,
    read_schedule,
    round_up,
    summarize,
    write_schedule,
)

#: The schedule file's columns, in order: the file format.
COLUMNS = ("iteration", "epoch", "batch_size", "seq_len", "tgt_len", "tokens", "padded_tokens", "sum_sq_len")


def test_round_up():
    np.testing.assert_array_equal(round_up(np.array([1, 8, 9]), 8), [8, 8, 16])
    np.testing.assert_array_equal(round_up(np.array([3]), 1), [3])


def _tiny(meta=None):
    return IterationSchedule.from_columns(
        {"batch_size": [2, 2, 4, 2], "seq_len": [10, 20, 10, 10], "epoch": [0, 0, 1, 1]},
        meta=meta,
    )


def test_unique_signatures_counts_and_inverse():
    s = _tiny()
    sig, counts, inv = s.unique_signatures()
    assert sig.tolist() == [[2, 10, 0], [2, 20, 0], [4, 10, 0]]
    assert counts.tolist() == [2, 1, 1]
    assert inv.tolist() == [0, 1, 2, 0]
    assert counts.sum() == len(s)


def test_packed_signature_includes_sum_sq_len():
    s = IterationSchedule.from_columns(
        {"batch_size": [1, 1], "seq_len": [8, 8], "sum_sq_len": [64, 32]}, meta={"packed": True}
    )
    sig, _counts, _ = s.unique_signatures()
    assert sig.shape == (2, 4)
    assert s.signature_columns()[-1] == "sum_sq_len"


def test_take_head_epochs():
    s = _tiny()
    assert len(s.head(2)) == 2
    assert s.epochs(1).epoch.tolist() == [0, 0]
    assert s.take([3]).iteration.tolist() == [3]


@pytest.mark.parametrize(
    ("cols", "match"),
    [
        ({"batch_size": [0], "seq_len": [3]}, "batch_size < 1"),
        ({"batch_size": [1], "seq_len": [0]}, "seq_len < 1"),
        ({"batch_size": [], "seq_len": []}, "empty"),
        ({"seq_len": [3]}, "missing the column 'batch_size'"),
        ({"batch_size": [1, 2], "seq_len": [3]}, "rows"),
    ],
)
def test_validation(cols, match):
    with pytest.raises(InputError, match=match):
        IterationSchedule.from_columns(cols)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip(tmp_path, suffix):
    s = _tiny(meta={"policy": "fixed", "packed": False})
    p = write_schedule(s, tmp_path / f"s{suffix}")
    back = read_schedule(p)
    assert back.equals(s)
    assert back.meta == s.meta


def test_csv_header_is_contract(tmp_path):
    p = write_schedule(_tiny(), tmp_path / "s.csv")
    assert p.read_text().splitlines()[0] == ",".join(COLUMNS)
    assert p.read_text().splitlines()[1] == "0,0,2,10,0,20,20,200"


@pytest.mark.parametrize(
    ("text", "match"),
    [(None, "does not exist"), ("iteration,epoch\n1,2\n", "lacks column"),
     (",".join(COLUMNS) + "\n1,0,2,x,0,1,1,1\n", "integer")],
)
def test_read_errors(tmp_path, text, match):
    path = tmp_path / "s.csv"
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError, match=match):
        read_schedule(path)


def test_write_needs_a_known_suffix(tmp_path):
    with pytest.raises(InputError, match=r"\.csv or \.parquet"):
        write_schedule(_tiny(), tmp_path / "s.txt")


def test_summary():
    s = _tiny()
    summ = summarize(s, bins=2)
    assert summ.n_iterations == 4 and summ.n_epochs == 2 and summ.n_unique_signatures == 3
    assert summ.padding_ratio == 0.0
    assert sum(summ.hist_counts) == 4
    json.dumps(summ.to_dict())
