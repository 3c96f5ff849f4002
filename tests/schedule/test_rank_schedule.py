"""The optional rank column of a data-parallel schedule: layout checks, views, files."""

from __future__ import annotations

import numpy as np
import pytest

from seqpoint.batching import replay
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.schedule import IterationSchedule, read_schedule, write_schedule


def _dp() -> IterationSchedule:
    return replay(np.arange(1, 30), "fixed", batch_size=4, world_size=2, epochs=2, seed=1)


def test_views_of_a_rank_schedule():
    s = _dp()
    assert s.world_size == 2 and s.n_steps == len(s) // 2
    r1 = s.for_rank(1)
    assert r1.rank is None and r1.meta["rank"] == 1
    assert np.array_equal(r1.iteration, np.arange(s.n_steps))
    assert np.array_equal(r1.seq_len, s.seq_len[1::2])
    flat = s.rank_rows()
    assert flat.rank is None and np.array_equal(flat.iteration, np.arange(len(s)))
    assert np.array_equal(flat.seq_len, s.seq_len)
    assert s.head(3).n_steps == 3 and s.head(3).world_size == 2
    with pytest.raises(ConfigError, match="Rank 2 is not below the world size 2; give a rank in 0..1"):
        s.for_rank(2)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_rank_schedule_round_trips_with_rank_last(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    s = _dp()
    path = write_schedule(s, tmp_path / f"s{suffix}")
    back = read_schedule(path)
    assert back.equals(s) and back.world_size == 2
    if suffix == ".csv":
        assert path.read_text().splitlines()[0].endswith(",sum_sq_len,rank")


def test_single_process_file_has_no_rank_column(tmp_path):
    s = replay(np.arange(1, 30), "fixed", batch_size=4, epochs=2, seed=1)
    path = write_schedule(s, tmp_path / "s.csv")
    assert path.read_text().splitlines()[0] == (
        "iteration,epoch,batch_size,seq_len,tgt_len,tokens,padded_tokens,sum_sq_len"
    )
    assert read_schedule(path).rank is None


def test_missing_rank_row_is_one_line(tmp_path):
    s = _dp()
    keep = np.ones(len(s), dtype=bool)
    keep[5] = False  # iteration 2 loses rank 1
    path = tmp_path / "bad.csv"
    text = path.parent / "full.csv"
    write_schedule(s, text)
    lines = text.read_text().splitlines()
    path.write_text("\n".join([lines[0], *[ln for i, ln in enumerate(lines[1:]) if keep[i]]]) + "\n")
    with pytest.raises(InputError, match=r"bad.csv: iteration 2 \(row 4\) lacks the row of rank 1 "
                                         r"\(a data-parallel schedule has 2 rows per iteration"):
        read_schedule(path)
    with pytest.raises(InputError, match="iteration 2 .* lacks the row of rank 1"):
        s.take(keep)


def test_last_rank_missing_at_the_end_and_meta_world_size():
    cols = {"batch_size": [1, 1, 1], "seq_len": [2, 3, 4], "iteration": [0, 0, 1]}
    base = IterationSchedule.from_columns(cols)
    with pytest.raises(InputError, match=r"iteration 1 \(row 2\) lacks the row of rank 1"):
        IterationSchedule(**base.columns(), rank=np.array([0, 1, 0]))
    # A rank absent everywhere is caught by the world size in meta.
    one = IterationSchedule.from_columns({"batch_size": [1, 1], "seq_len": [2, 3]})
    with pytest.raises(InputError, match="lacks the row of rank 1"):
        IterationSchedule(**one.columns(), rank=np.array([0, 0]), meta={"world_size": 2})
