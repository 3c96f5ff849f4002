"""Issue 13: histograms under other headers, warnings for ignored columns, size and text guards."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from seqpoint.exceptions import InputError, SeqPointWarning
from seqpoint.traces import MAX_LENGTH, decompress, from_array, read_lengths


def write(path: Path, body: str | bytes) -> Path:
    path.write_bytes(body.encode() if isinstance(body, str) else body)
    return path


@pytest.mark.parametrize("header", ["tokens,count", "length,n", "frames,freq", "len,occurrences"])
def test_histogram_detected_by_its_count_column(tmp_path: Path, header: str) -> None:
    p = write(tmp_path / "h.csv", f"{header}\n5,100\n9,262\n")
    lens = read_lengths(p)  # a histogram: found by its count column
    assert len(lens) == 362 and sorted(set(lens.src.tolist())) == [5, 9]


def test_pair_histogram_with_other_names(tmp_path: Path) -> None:
    lens = read_lengths(write(tmp_path / "h.csv", "s,t,n\n5,6,1\n8,2,2\n"))
    assert lens.src.tolist() == [5, 8, 8] and lens.tgt is not None and lens.tgt.tolist() == [6, 2, 2]


def test_count_and_length_columns_named(tmp_path: Path) -> None:
    p = write(tmp_path / "h.csv", "bin,utterances,seconds\n5,3,0.05\n7,1,0.07\n")
    with pytest.warns(SeqPointWarning, match="ignoring column.*'seconds'"):
        lens = read_lengths(p, column="bin", count_column="utterances")
    assert lens.src.tolist() == [5, 5, 5, 7]
    with pytest.raises(InputError, match="needs a count column.*--count-column"):
        read_lengths(p, format="histogram")


def test_csv_warns_when_a_length_column_is_ignored(tmp_path: Path) -> None:
    p = write(tmp_path / "a.csv", "id,length,tokens\na,3,4\nb,5,6\n")
    with pytest.warns(SeqPointWarning, match="reading 'length'; ignoring column.*'tokens'"):
        assert read_lengths(p).src.tolist() == [3, 5]


def test_cr_only_line_ends(tmp_path: Path) -> None:
    assert read_lengths(write(tmp_path / "a.csv", "length\r4\r5\r")).src.tolist() == [4, 5]
    assert read_lengths(write(tmp_path / "h.csv", "length,count\r4,2\r")).src.tolist() == [4, 4]
    assert read_lengths(write(tmp_path / "t.txt", "a b\rc\r")).src.tolist() == [2, 1]


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("length,count\n5,400000000\n", r"count 4e\+08 is too large; every count must be <= 100,000,000"),
        ("length,count\n5,4611686018427387904\n", r"count .* is too large"),
        ("length,count\n5,60000000\n6,60000000\n", r"add up to 120,000,000 samples, more than the limit"),
        ("length,count\n4611686018427387904,1\n", r"is too large; every length must be <= 2,147,483,647"),
    ],
)
def test_histogram_guards_before_allocating(tmp_path: Path, body: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        read_lengths(write(tmp_path / "h.csv", body), format="histogram")


def test_lengths_below_2_31(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="must be <= 2,147,483,647"):
        from_array(np.array([MAX_LENGTH + 1]))
    with pytest.raises(InputError, match="must be <= 2,147,483,647"):
        from_array(np.array([2**63], dtype=np.uint64))
    with pytest.raises(InputError, match="line 1: 'duration' 4.6e\\+18 is too large"):
        read_lengths(write(tmp_path / "d.jsonl", '{"duration": 4.6e16}\n'))


@pytest.mark.parametrize(
    ("name", "body", "match"),
    [
        ("a.csv", b"length\n\xff\xfe\n", "line 2: not valid UTF-8"),
        ("t.txt", "12\n".encode("utf-16"), "NUL byte"),
        ("m.jsonl", b'{"duration": 1}\n\x00', "NUL byte"),
        ("h.csv", b"length,count\n1,\xa02\n", "not valid UTF-8"),
    ],
)
def test_non_utf8_is_one_clear_error(tmp_path: Path, name: str, body: bytes, match: str) -> None:
    with pytest.raises(InputError, match=match):
        read_lengths(write(tmp_path / name, body))


def test_deep_json_and_gzip_bomb(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="line 1"):
        read_lengths(write(tmp_path / "m.jsonl", "[" * 40_000 + "\n"))
    # 2 MiB of data in a few KiB, against a 1 MiB cap (the real one is 1 GiB)
    bomb = gzip.compress(b"length\n" + b"1\n" * (1 << 20))
    with pytest.raises(InputError, match="b.csv.gz holds more than 1 MiB of data"):
        decompress(bomb, name="b.csv.gz", limit=1 << 20)


def test_device_files_end(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="NUL byte"):
        read_lengths("/dev/zero", format="text")
