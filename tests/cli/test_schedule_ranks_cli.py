"""``seqpoint schedule --world-size N [--rank R]``: a rank column, one row per rank and step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from seqpoint.batching import replay
from seqpoint.schedule import read_schedule
from seqpoint.traces import read_lengths

#: The schedule file's columns, in order: the file format.
COLUMNS = ("iteration", "epoch", "batch_size", "seq_len", "tgt_len", "tokens", "padded_tokens", "sum_sq_len")

SRC = "bundled:librispeech-dev-clean"


def test_world_size_appends_the_rank_column(tmp_path: Path, cli) -> None:
    out = tmp_path / "s.csv"
    rc, out_, err = cli(["schedule", SRC, "--policy", "fixed", "--batch-size", "16", "--world-size", "2",
               "--seed", "4", "-o", str(out)])
    assert rc == 0, err
    assert out.read_text().split("\n", 1)[0] == ",".join(COLUMNS) + ",rank"
    sched = read_schedule(out)
    want = replay(read_lengths(SRC), "fixed", batch_size=16, seed=4, world_size=2)
    assert sched.equals(want) and sched.world_size == 2
    assert "2 ranks" in out_


def test_rank_selects_one_ranks_rows(tmp_path: Path, cli) -> None:
    out = tmp_path / "r1.parquet"
    pytest.importorskip("pyarrow")
    rc, _out, err = cli(["schedule", SRC, "--policy", "bucket", "--batch-size", "8", "--num-buckets", "4",
               "--world-size", "3", "--rank", "1", "-o", str(out)])
    assert rc == 0, err
    one = read_schedule(out)
    full = replay(read_lengths(SRC), "bucket", batch_size=8, num_buckets=4, world_size=3)
    assert one.rank is None
    assert np.array_equal(one.seq_len, full.for_rank(1).seq_len)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--world-size", "0"], "The 'world_size' parameter of [batching] must be an int >= 1"),
        (["--world-size", "2", "--rank", "2"], "rank = 2 is not below world_size = 2; give a rank in 0..1"),
        (["--rank", "1"], "rank = 1 is not below world_size = 1"),
        (["--world-size", "2", "--shard", "rows"], "[batching]"),
    ],
)
def test_bad_rank_flags_are_one_line_exit_2(tmp_path: Path, cli, argv, message) -> None:
    rc, _out, err = cli(["schedule", SRC, "--policy", "fixed", "--batch-size", "8", *argv,
               "-o", str(tmp_path / "s.csv")])
    assert rc == 2
    assert message in err and len(err.strip().splitlines()) == 1


def test_missing_rank_row_in_a_file_is_exit_2(tmp_path: Path, cli) -> None:
    good = tmp_path / "good.csv"
    assert cli(["schedule", SRC, "--policy", "sorted", "--batch-size", "16", "--world-size", "2",
                "-o", str(good)])[0] == 0
    lines = good.read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines[:4] + lines[5:]) + "\n")  # drop iteration 1's rank 1
    rc, _out, err = cli(["select", str(bad), "-k", "2", "-o", str(tmp_path / "p.json")])
    assert rc == 2
    assert "iteration 1 (row 2) lacks the row of rank 1" in err
