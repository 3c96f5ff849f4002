import numpy as np
import pytest

from seqpoint.exceptions import AdjustedInputWarning, InputError
from seqpoint.schedule import RowLengths, RunTrace, read_trace, write_trace

#: The schedule file's columns, in order: the file format.
COLUMNS = ("iteration", "epoch", "batch_size", "seq_len", "tgt_len", "tokens", "padded_tokens", "sum_sq_len")


def _trace(rank=None):
    # Two optimizer steps of two micro-batches each (gradient accumulation 2).
    return RunTrace(
        iteration=[0, 0, 1, 1],
        epoch=[0, 0, 0, 1],
        micro_batch=[0, 1, 0, 1],
        batch_size=[4, 4, 4, 2],
        seq_len=[16, 24, 8, 32],
        tgt_len=[0, 0, 0, 0],
        tokens=[50, 70, 30, 40],
        sum_sq_len=[700, 1500, 250, 900],
        time_s=[0.1, 0.2, 0.05, 0.25],
        rank=rank,
        meta={"recorder": "test"},
    )


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_trace_round_trips_with_meta(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    t = _trace()
    back = read_trace(write_trace(t, tmp_path / f"run{suffix}"))
    for name, arr in t.columns().items():
        np.testing.assert_array_equal(getattr(back, name), arr)
    assert back.rank is None
    assert back.meta == {"recorder": "test"}


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_lengths_that_do_not_fit_the_trace_are_left_out(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    fits = [[16, 9, 4, 2], [24, 20, 3, 1], [8, 8, 8, 8], [32, 5]]
    t = _trace()
    good = RunTrace(**t.columns(), meta=t.meta, rows=RowLengths.from_lists(fits))
    back = read_trace(write_trace(good, tmp_path / f"ok{suffix}"))
    assert back.rows is not None and back.rows.row(3)[0].tolist() == [32, 5]
    # A recorder before 2026-11-25 wrote a speech mask's 3,000 frames where seq_len was 24.
    bad = RunTrace(**t.columns(), meta=t.meta, rows=RowLengths.from_lists([*fits[:1], [3000] * 4, *fits[2:]]))
    path = write_trace(bad, tmp_path / f"run{suffix}")
    where = "line 3" if suffix == ".csv" else "row 1"
    with pytest.warns(AdjustedInputWarning, match=rf"run{suffix}\.rows\.npz does not fit .*run\{suffix}: for {where} it "
                      r"holds a sequence of 3000 tokens, but the row's seq_len is 24\. Its lengths are left out"):
        back = read_trace(path)
    assert back.rows is None
    np.testing.assert_array_equal(back.seq_len, t.seq_len)  # the trace itself is kept


def test_rank_column_round_trips(tmp_path):
    t = _trace(rank=[1, 1, 1, 1])
    back = read_trace(write_trace(t, tmp_path / "run.csv"))
    assert back.ranks == [1]
    assert (tmp_path / "run.csv").read_text().splitlines()[0] == (
        "iteration,epoch,micro_batch,batch_size,seq_len,tgt_len,tokens,sum_sq_len,time_s,rank"
    )


def test_to_schedule_has_one_row_per_micro_batch_and_keeps_steps():
    s = _trace().to_schedule()
    assert len(s) == 4
    np.testing.assert_array_equal(s.iteration, [0, 1, 2, 3])
    np.testing.assert_array_equal(s.epoch, [0, 0, 0, 1])
    np.testing.assert_array_equal(s.padded_tokens, [64, 96, 32, 64])
    assert s.meta["optimizer_step"] == [0, 0, 1, 1]
    assert s.meta["micro_batch"] == [0, 1, 0, 1]
    assert set(s.columns()) == set(COLUMNS)


def test_step_times_sum_micro_batches():
    t = _trace()
    np.testing.assert_allclose(t.step_times_s(), [0.3, 0.3])
    assert t.total_time_s == pytest.approx(0.6)


def test_data_parallel_step_lasts_as_long_as_the_slowest_rank():
    a = _trace(rank=[0, 0, 0, 0])
    b = _trace(rank=[1, 1, 1, 1])
    cols = {c: np.concatenate([a.columns()[c], b.columns()[c]]) for c in a.columns()}
    cols["time_s"] = np.array([0.1, 0.2, 0.05, 0.25, 0.3, 0.2, 0.1, 0.1])
    t = RunTrace(**cols)
    np.testing.assert_allclose(t.step_times_s(), [0.5, 0.3])
    with pytest.raises(InputError, match="holds ranks \\[0, 1\\]; pick one with rank=R"):
        t.to_schedule()
    assert len(t.to_schedule(rank=1)) == 4


@pytest.mark.parametrize(("old", "new", "message"), [
    (",24,", ",x,", r"line 3, column 'seq_len': 'x' is not an integer; fix or drop that row"),
    (",0.2", ",slow", r"line 3, column 'time_s': 'slow' is not a number of seconds"),
    (",0.2", ",inf", r"line 3, column 'time_s': 'inf' is not finite; fix or drop that row"),
])
def test_bad_value_names_file_line_and_column(tmp_path, old, new, message):
    p = write_trace(_trace(), tmp_path / "run.csv")
    lines = p.read_text().splitlines()
    lines[2] = lines[2].replace(old, new, 1)
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"run.csv: " + message):
        read_trace(p)


def test_a_header_without_rows_is_empty(tmp_path):
    p = write_trace(_trace(), tmp_path / "run.csv")
    p.write_text(p.read_text().splitlines()[0] + "\n\n")
    with pytest.raises(InputError, match="run.csv has a header but no rows; the run trace is empty"):
        read_trace(p)


def test_missing_column_and_missing_file(tmp_path):
    p = tmp_path / "run.csv"
    p.write_text("iteration,epoch,batch_size,seq_len\n0,0,1,2\n")
    with pytest.raises(InputError, match="line 1 lacks column\\(s\\) micro_batch, tgt_len"):
        read_trace(p)
    with pytest.raises(InputError, match="does not exist; a run trace is written by"):
        read_trace(tmp_path / "none.csv")


def test_invalid_rows_are_rejected():
    with pytest.raises(InputError, match="time_s -1.0; times must be finite"):
        RunTrace.from_rows([dict(iteration=0, epoch=0, micro_batch=0, batch_size=1, seq_len=2,
                                 tgt_len=0, tokens=2, sum_sq_len=4, time_s=-1.0)])
    with pytest.raises(InputError, match="run trace is empty"):
        RunTrace.from_rows([])
