"""Schedule files: round trips, and one InputError line for every kind of bad CSV or Parquet."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from seqpoint.exceptions import AdjustedInputWarning, InputError
from seqpoint.schedule import IterationSchedule, read_schedule, write_schedule

#: The schedule file's columns, in order: the file format.
COLUMNS = ("iteration", "epoch", "batch_size", "seq_len", "tgt_len", "tokens", "padded_tokens", "sum_sq_len")

HEADER = ",".join(COLUMNS)
#       iteration,epoch,batch_size,seq_len,tgt_len,tokens,padded_tokens,sum_sq_len
GOOD = ["0,0,2,5,0,9,10,50", "1,0,2,7,1,12,16,98", "2,1,1,3,0,3,3,9"]


def csv(tmp_path: Path, rows: list[str], *, header: str = HEADER, newline: str = "\n") -> Path:
    path = tmp_path / "s.csv"
    path.write_bytes(newline.join([header, *rows, ""]).encode())
    return path


def test_csv_round_trip_with_sidecar(tmp_path: Path) -> None:
    sched = IterationSchedule.from_columns(
        {"batch_size": np.array([2, 4]), "seq_len": np.array([5, 9]), "epoch": np.array([0, 1])},
        meta={"policy": "fixed", "packed": False, "params": {"batch_size": 2}},
    )
    back = read_schedule(write_schedule(sched, tmp_path / "s.csv"))
    assert back.equals(sched) and back.meta == sched.meta


def test_parquet_round_trip(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    sched = IterationSchedule.from_columns({"batch_size": np.array([2, 4]), "seq_len": np.array([5, 9])},
                                           meta={"policy": "sorted"})
    back = read_schedule(write_schedule(sched, tmp_path / "s.parquet"))
    assert back.equals(sched) and back.meta == {"policy": "sorted"}


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_every_line_end_reads(newline: str, tmp_path: Path) -> None:
    sched = read_schedule(csv(tmp_path, GOOD, newline=newline))
    assert sched.seq_len.tolist() == [5, 7, 3]


BAD: list[tuple[str, list[str], str]] = [
    ("float", ["0,0,2,5,0,9,10,50", "1,0,1.5,7,1,12,16,98"],
     r"line 3, column 'batch_size' holds '1\.5' \(the character '\.'\); every schedule value must be an integer"),
    ("string", ["0,0,2,five,0,9,10,50"], r"line 2, column 'seq_len' holds 'five' \(the character 'f'\); every"),
    ("NUL", ["0,0,2,5\x00,0,9,10,50"], r"line 2, column 'seq_len' holds '5\\x00' \(the character '\\x00'\)"),
    ("non-ASCII digit", ["0,0,2,\u0665,0,9,10,50"], r"line 2, column 'seq_len' holds '\u0665'"),
    ("past the columns", ["0,0,2,5,0,9,10,50,x"], r"line 2, value 9 holds 'x'"),
    ("beyond int64", ["0,0,2,5,0,9,10,99999999999999999999"],
     r"line 2, column 'sum_sq_len': could not convert string '9+' to int64; every schedule value must be"),
    ("two signs after a blank line", [GOOD[0], "", "1,0,2,+-7,1,12,16,98"],
     r"line 4, column 'seq_len': could not convert string '\+-7' to int64"),
    ("zero batch", ["0,0,0,5,0,0,0,0"], r"line 2 \(iteration 0\): batch_size must be in \[1, 2147483647\] \(got 0\)"),
    ("length 2^62", [f"0,0,2,{2**62},0,9,10,50"], r"seq_len must be in \[1, 2147483647\]"),
    ("negative epoch", ["0,-1,2,5,0,9,10,50"], r"epoch must be in \[0, "),
    ("reversed", [GOOD[1], GOOD[0]], r"line 3 \(iteration 0\): iterations must be strictly increasing and unique "
     r"\(iteration 1 on line 2 comes before it\)"),
    ("duplicate", [GOOD[0], GOOD[0]], r"line 3 \(iteration 0\): iterations must be strictly increasing"),
    ("epoch goes back", ["0,1,2,5,0,9,10,50", "1,0,2,5,0,9,10,50"], r"line 3 \(iteration 1\): epochs must not decrease "
     r"\(epoch 0 after epoch 1 on line 2\)"),
    ("tokens over padded", ["0,0,2,5,0,11,10,50"], r"tokens must not exceed padded_tokens"),
    ("padded wrong", ["0,0,2,5,0,9,12,50"], r"padded_tokens must be batch_size\*\(seq_len\+tgt_len\) = 10 \(got 12\)"),
    ("padded zero", ["0,0,2,5,0,0,0,50"], r"padded_tokens must be in \[1, "),
    ("ragged", ["0,0,2,5,0,9,10"], r"rows have 7 values but the header names 8 columns"),
    ("ragged later", [GOOD[0], "", GOOD[1], "2,0,2"],
     r"line 5 has 3 values, the header and the rows before it 8; every row needs one value per header column"),
    ("ragged first", ["0,0,2,5,0,9,10", GOOD[1], GOOD[2]], r"line 2 has 7 values but the header names 8 columns"),
    ("line of blanks", [GOOD[0], "  ", GOOD[1]], r"line 3 holds only blanks; delete it\."),
    ("comment", [GOOD[0], "# made by hand", GOOD[1]], r"line 3, column 'iteration' holds '# made by hand' "
     r"\(the character '#'\); comments are not allowed; delete the line\."),
    ("quoted", ['"0",0,2,5,0,9,10,50'], r"line 2, column 'iteration' holds '\"0\"' .*; remove the quotes\."),
    ("zero batch after a blank line", [GOOD[0], "", "1,0,0,5,0,0,0,0"], r"line 4 \(iteration 1\): batch_size must be"),
    # the first error in the file is the one reported, whichever check finds it
    ("short row before a bad character", [GOOD[0], "1,0,2", GOOD[1], "3,0,2,x,0,9,10,50"],
     r"line 3 has 3 values, the header and the rows before it 8"),
    ("bad character before a short row", [GOOD[0], "1,0,2,x,0,9,10,50", "2,0,2"], r"line 3, column 'seq_len' holds 'x'"),
]


@pytest.mark.parametrize(("rows", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_csv_is_one_line(rows: list[str], message: str, tmp_path: Path) -> None:
    path = csv(tmp_path, rows)
    with pytest.raises(InputError, match=message) as info:
        read_schedule(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_excel_byte_order_mark_and_unknown_columns(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_bytes(("\ufeff" + "\n".join([f"{HEADER},note", *(f"{r},7" for r in GOOD), ""])).encode())
    with pytest.warns(AdjustedInputWarning, match=r"ignoring column\(s\) 'note' of line 1"):
        assert read_schedule(path).seq_len.tolist() == [5, 7, 3]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (gzip.compress(f"{HEADER}\n{GOOD[0]}\n".encode(), mtime=0), r"must be UTF-8 text; this is a gzip-compressed file"),
        (f"{HEADER}\n{GOOD[0]}\n".encode("utf-16"), r"UTF-16"),
        (f"{HEADER}\n{GOOD[0]},caf\u00e9\n".encode("latin-1"),
         rf"line 2, column {len(GOOD[0]) + 5} \(byte 0xe9\): Schedule file must be UTF-8 text; this is text in "
         r"another encoding \(Latin-1"),
        # columns in characters after multi-byte UTF-8, lines after a CR-only line end
        (f"{HEADER}\r0,\u00fc".encode() + b"\xe9", r"line 2, column 4 \(byte 0xe9\)"),
        (b"", r"line 1 lacks column.*; the file is empty\."),
        (b'"iteration","epoch"\n0,0\n', r"; its names are quoted; remove the quotes\."),
        # a SeqPoints or measurements file given where the schedule goes
        (b'{\n  "points": [],\n  "meta": {}\n}\n', r"s\.csv is JSON, not a schedule CSV: give the schedule "
         r"\(\.csv or \.parquet\) here, not a SeqPoints, measurements or trace file\.$"),
        (b'  [{"iteration": 0, "seq_len": 5}]', r"s\.csv is JSON, not a schedule CSV"),
        (b"iteration\tepoch\tbatch_size\n0\t0\t2\n", r"; it is not comma-separated\."),
        (f"{HEADER},seq_len\n{GOOD[0]},5\n".encode(), r"line 1 names column\(s\) 'seq_len' more than once; keep one\."),
        (f"{HEADER},\n{GOOD[0]},\n".encode(), r"line 1 has an empty column name \(column 9: a trailing or doubled comma\?\)"),
    ],
)
def test_undecodable_csv(raw: bytes, message: str, tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_bytes(raw)
    with pytest.raises(InputError, match=message):
        read_schedule(path)


@pytest.mark.parametrize(
    ("sidecar", "message"),
    [
        (b"{", r"s\.csv\.meta\.json: line 1: invalid JSON"),
        (b"[]", r"s\.csv\.meta\.json: top level: must be an object"),
        (b'{"packed": "false"}', r"s\.csv\.meta\.json: packed: must be true or false"),
        (gzip.compress(b"{}", mtime=0), r"gzip-compressed"),
    ],
)
def test_bad_sidecar(sidecar: bytes, message: str, tmp_path: Path) -> None:
    path = csv(tmp_path, GOOD)
    (tmp_path / "s.csv.meta.json").write_bytes(sidecar)
    with pytest.raises(InputError, match=message):
        read_schedule(path)


def test_folder_is_not_a_schedule(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a folder"):
        read_schedule(tmp_path)


def test_parquet_string_column_and_metadata(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    cols = {c: [0] for c in COLUMNS} | {"batch_size": [1], "seq_len": [2], "padded_tokens": [2]}
    table = pa.table(cols | {"seq_len": ["2"]})
    pq.write_table(table, tmp_path / "s.parquet")
    with pytest.raises(InputError, match=r"column 'seq_len' has type string; every schedule column must be an integer"):
        read_schedule(tmp_path / "s.parquet")
    table = pa.table(cols).replace_schema_metadata({"seqpoint": json.dumps([1])})
    pq.write_table(table, tmp_path / "m.parquet")
    with pytest.raises(InputError, match=r"metadata 'seqpoint': top level: must be an object"):
        read_schedule(tmp_path / "m.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 junk")
    with pytest.raises(InputError, match=r"Cannot read Parquet schedule"):
        read_schedule(tmp_path / "junk.parquet")
