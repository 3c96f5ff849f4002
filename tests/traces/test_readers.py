"""Length readers: exact values on tiny files, gzip by magic bytes, and every bad-input rule."""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from seqpoint.exceptions import AdjustedInputWarning, ConfigError, InputError
from seqpoint.traces import (
    Lengths,
    from_array,
    read_lengths,
)

# Each reader through read_lengths, its format named as a user names it.
read_csv_lengths = functools.partial(read_lengths, format="csv")
read_histogram = functools.partial(read_lengths, format="histogram")
read_jsonl_lengths = functools.partial(read_lengths, format="jsonl")
read_numpy_lengths = functools.partial(read_lengths, format="numpy")
read_text_lengths = functools.partial(read_lengths, format="text")


def read_parallel_lengths(src, tgt, **kwargs):  # type: ignore[no-untyped-def]
    return read_lengths(src, format="parallel", tgt=tgt, **kwargs)


def write(path: Path, text: str | bytes, *, gz: bool = False) -> Path:
    data = text.encode() if isinstance(text, str) else text
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


# ---------------------------------------------------------------- CSV
def test_csv_column_exact(tmp_path: Path) -> None:
    p = write(tmp_path / "a.csv", "id,length,label\n0,12,x\n1,7,y\n2,30,z\n")
    lens = read_csv_lengths(p, column="length")
    assert lens.src.tolist() == [12, 7, 30]
    assert lens.src.dtype == np.int64
    assert lens.tgt is None and lens.unit == "tokens"


def test_csv_default_column_and_unnamed_index(tmp_path: Path) -> None:
    # The LibriSpeech files start with an unnamed index column.
    p = write(tmp_path / "a.csv", ",file_path,length,label\n0,a.flac,160,\n1,b.flac,320,\n")
    assert read_csv_lengths(p).src.tolist() == [160, 320]


def test_csv_samples_to_frames_rounds_up_exactly(tmp_path: Path) -> None:
    # 225360/160 = 1408.5 -> 1409; 225440/160 = 1409 exactly (no float noise to 1410).
    p = write(tmp_path / "a.csv", "length\n225360\n225440\n1\n160\n", gz=True)
    lens = read_csv_lengths(p, sample_rate=16000)
    assert lens.src.tolist() == [1409, 1409, 1, 1]
    assert lens.unit == "frames"
    assert read_csv_lengths(p, scale=1 / 160).src.tolist() == [1409, 1409, 1, 1]


def test_gzip_detected_by_magic_not_name(tmp_path: Path) -> None:
    gz_named_csv = write(tmp_path / "a.csv", "length\n4\n", gz=True)
    plain_named_gz = write(tmp_path / "b.csv.gz", "length\n5\n")
    assert read_csv_lengths(gz_named_csv).src.tolist() == [4]
    assert read_csv_lengths(plain_named_gz).src.tolist() == [5]


def test_csv_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.csv: no such file"):
        read_csv_lengths(tmp_path / "nope.csv")


def test_csv_broken_gzip(tmp_path: Path) -> None:
    p = write(tmp_path / "a.csv.gz", gzip.compress(b"length\n1\n2\n", mtime=0)[:15])
    with pytest.raises(InputError, match=r"cannot be decompressed.*truncated or corrupt"):
        read_csv_lengths(p)


def test_csv_missing_column_lists_columns(tmp_path: Path) -> None:
    p = write(tmp_path / "a.csv", "id,size\n0,3\n")
    with pytest.raises(InputError, match=r"no column 'len'; its columns are 'id', 'size'.*--column"):
        read_csv_lengths(p, column="len")
    with pytest.raises(InputError, match=r"no length column.*'id', 'size'"):
        read_csv_lengths(p)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("length\n3\n2.5\n", r"line 3: 'length' 2.5 is not an integer"),
        ("length\n3\n-4\n", r"line 3: 'length' is -4 \(negative\)"),
        ("length\n3\n0\n", r"line 3: 'length' is 0 \(zero\)"),
        ("length\n3\nnan\n", r"line 3: 'length' is nan \(missing"),
        ("id,length\n0,3\n1,\n", r"line 3: 'length' is nan \(missing"),
        ("length\n3\nabc\n", r"line 3: 'length' is 'abc', not a number"),
    ],
)
def test_csv_bad_values_name_the_line(tmp_path: Path, body: str, match: str) -> None:
    p = write(tmp_path / "a.csv", body)
    with pytest.raises(InputError, match=match):
        read_csv_lengths(p)


def test_csv_blank_lines_are_ignored(tmp_path: Path) -> None:
    assert read_csv_lengths(write(tmp_path / "a.csv", "length\n3\n\n4\n")).src.tolist() == [3, 4]


def test_csv_empty_inputs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no data rows"):
        read_csv_lengths(write(tmp_path / "h.csv", "length\n"))
    with pytest.raises(InputError, match="empty"):
        read_csv_lengths(write(tmp_path / "e.csv", ""))


def test_csv_bad_scale(tmp_path: Path) -> None:
    p = write(tmp_path / "a.csv", "length\n3\n")
    with pytest.raises(ConfigError, match="'scale' parameter must be a finite number > 0"):
        read_csv_lengths(p, scale=0)
    with pytest.raises(ConfigError, match="either 'scale' or 'sample_rate'"):
        read_csv_lengths(p, scale=2, sample_rate=16000)
    with pytest.raises(ConfigError, match="'sample_rate' parameter must be a number > 0"):
        read_csv_lengths(p, sample_rate=-1)


# ---------------------------------------------------------------- JSON lines
def test_jsonl_duration_to_frames(tmp_path: Path) -> None:
    rows = [{"audio": "a", "duration": 14.085}, {"audio": "b", "duration": 1.0}, {"duration": 0.001}]
    p = write(tmp_path / "m.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    lens = read_jsonl_lengths(p)
    assert lens.src.tolist() == [1409, 100, 1]
    assert lens.unit == "frames"


def test_jsonl_integer_key_without_conversion(tmp_path: Path) -> None:
    p = write(tmp_path / "m.jsonl.gz", '{"n": 5}\n{"n": 9}\n', gz=True)
    assert read_jsonl_lengths(p, key="n", frames_per_second=None).src.tolist() == [5, 9]


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ('{"duration": 1}\n{"dur": 2}\n', r"line 2: no 'duration' field \(found 'dur'\)"),
        ('{"duration": 1}\n{"duration": \n', r"line 2: not valid JSON"),
        ('{\n  "points": [1, 2]\n}\n', r"is one JSON document, not JSON lines: a manifest holds one JSON object per line"),
        ('{"duration": \n', r"line 1: not valid JSON"),
        ('{"duration": 1}\n{"duration": "x"}\n', r"line 2: 'duration' is 'x', not a number"),
        ('{"duration": 1}\n\n{"duration": -1}\n', r"line 3: 'duration' is -100 \(negative\)"),
        ('{"duration": 1}\n{"duration": null}\n', r"line 2: 'duration' is nan"),
        ("\n\n", r"holds no samples"),
    ],
)
def test_jsonl_bad_input(tmp_path: Path, body: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        read_jsonl_lengths(write(tmp_path / "m.jsonl", body))


# ---------------------------------------------------------------- text
def test_text_whitespace_tokens_and_blank_lines(tmp_path: Path) -> None:
    p = write(tmp_path / "t.txt", "a b c\n\n  d \t e\r\nf\n   \n")
    with pytest.warns(AdjustedInputWarning, match=r"dropped 2 empty line\(s\) \(first: line 2\)"):
        lens = read_text_lengths(p)
    assert lens.src.tolist() == [3, 2, 1]
    with pytest.warns(AdjustedInputWarning):
        assert read_text_lengths(p, extra_tokens=1).src.tolist() == [4, 3, 2]


def test_text_no_final_newline_and_no_blank(tmp_path: Path) -> None:
    p = write(tmp_path / "t.txt", "x y\nz")
    assert read_text_lengths(p).src.tolist() == [2, 1]


def test_text_skip_empty_false(tmp_path: Path) -> None:
    p = write(tmp_path / "t.txt", "a b\n\nc\n")
    with pytest.raises(InputError, match=r"line 2 is empty \(0 tokens\)"):
        read_text_lengths(p, skip_empty=False)
    # With an EOS token a blank line is a sample of length 1.
    assert read_text_lengths(p, skip_empty=False, extra_tokens=1).src.tolist() == [3, 1, 2]


def test_text_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="holds no lines"):
        read_text_lengths(write(tmp_path / "e.txt", ""))
    with pytest.raises(InputError, match="only blank lines"), pytest.warns(AdjustedInputWarning):
        read_text_lengths(write(tmp_path / "b.txt", "\n \n"))
    with pytest.raises(ConfigError, match="'extra_tokens' parameter must be an int >= 0"):
        read_text_lengths(write(tmp_path / "t.txt", "a\n"), extra_tokens=-1)


def test_text_callable_tokenizer(tmp_path: Path) -> None:
    p = write(tmp_path / "t.txt", "abc\nde\n")
    assert read_text_lengths(p, tokenizer=list).src.tolist() == [3, 2]


def test_text_hf_tokenizers_tokenizer(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from tokenizers.processors import TemplateProcessing

    tok = tokenizers.Tokenizer(WordLevel({"[UNK]": 0, "a": 1, "[EOS]": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    tok.post_processor = TemplateProcessing(single="$A [EOS]", special_tokens=[("[EOS]", 2)])
    p = write(tmp_path / "t.txt", "a a, b\nzz\n")
    # Whitespace pre-tokenizer splits punctuation: "a a , b" = 4 pieces (+1 EOS).
    assert read_text_lengths(p, tokenizer=tok).src.tolist() == [5, 2]
    assert read_text_lengths(p, tokenizer=tok, add_special_tokens=False).src.tolist() == [4, 1]
    tok.save(str(tmp_path / "tokenizer.json"))
    assert read_text_lengths(p, tokenizer=tmp_path / "tokenizer.json").src.tolist() == [5, 2]


def test_text_tokenizer_path_errors(tmp_path: Path) -> None:
    p = write(tmp_path / "t.txt", "a\n")
    with pytest.raises(ConfigError, match="does not exist"):
        read_text_lengths(p, tokenizer=tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="Unsupported tokenizer int"):
        read_text_lengths(p, tokenizer=3)


def test_text_invalid_utf8_with_tokenizer(tmp_path: Path) -> None:
    p = write(tmp_path / "t.txt", b"ok\n\xff\xfe bad\n")
    with pytest.raises(InputError, match="line 2: not valid UTF-8"):
        read_text_lengths(p, tokenizer=list)


# ---------------------------------------------------------------- parallel
def test_parallel_pairs_and_dropped_empty_pair(tmp_path: Path) -> None:
    s = write(tmp_path / "s.txt", "a b\n\nc d e\n", gz=True)
    t = write(tmp_path / "t.txt", "x\ny y\nz z\n")
    with pytest.warns(AdjustedInputWarning, match=r"dropped 1 empty-pair line\(s\) \(first: line 2\)"):
        lens = read_parallel_lengths(s, t)
    assert lens.src.tolist() == [2, 3]
    assert lens.tgt is not None and lens.tgt.tolist() == [1, 2]
    assert lens.num_tokens().tolist() == [2, 3]


def test_parallel_misaligned(tmp_path: Path) -> None:
    s = write(tmp_path / "s.txt", "a\nb\n")
    t = write(tmp_path / "t.txt", "x\n")
    with pytest.raises(InputError, match=r"misaligned: .*s\.txt has 2 lines but .*t\.txt has 1"):
        read_parallel_lengths(s, t)


# ---------------------------------------------------------------- histogram
def test_histogram_single_and_pairs(tmp_path: Path) -> None:
    h1 = write(tmp_path / "h.csv", "length,count\n10,2\n3,0\n7,1\n")
    assert read_histogram(h1).src.tolist() == [10, 10, 7]
    h2 = write(tmp_path / "h2.csv", "src,tgt,count\n5,6,1\n8,2,2\n")
    lens = read_histogram(h2)
    assert lens.src.tolist() == [5, 8, 8]
    assert lens.tgt is not None and lens.tgt.tolist() == [6, 2, 2]


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("len,size\n1,2\n", r"a histogram needs a count column"),
        ("length,count\n", r"no rows"),
        ("length,count\n4,0\n", r"every count is 0"),
        ("length,count\n4,-1\n", r"line 2: count is -1 \(negative\)"),
        ("length,count\n4,1\n0,1\n", r"line 3: length is 0 \(zero\)"),
        ("length,count\n4,1.5\n", r"line 2: count 1.5 is not an integer"),
        ("length,count\n4\n", r"line 2: 1 fields, expected 2"),
        ("length,count\n4,x\n", r"line 2: .* not a number"),
    ],
)
def test_histogram_bad_input(tmp_path: Path, body: str, match: str) -> None:
    with pytest.raises(InputError, match=match):
        read_histogram(write(tmp_path / "h.csv", body))


# ---------------------------------------------------------------- numpy
def test_numpy_files(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array([3, 4]))
    np.save(tmp_path / "b.npy", np.array([[3, 1], [4, 2]]))
    np.savez(tmp_path / "c.npz", src=np.array([5]), tgt=np.array([6]))
    assert read_numpy_lengths(tmp_path / "a.npy").src.tolist() == [3, 4]
    b = read_numpy_lengths(tmp_path / "b.npy")
    assert b.src.tolist() == [3, 4] and b.tgt is not None and b.tgt.tolist() == [1, 2]
    c = read_numpy_lengths(tmp_path / "c.npz")
    assert c.src.tolist() == [5] and c.tgt is not None and c.tgt.tolist() == [6]
    write(tmp_path / "bad.npy", "not numpy")
    with pytest.raises(InputError, match="not a readable .npy/.npz"):
        read_numpy_lengths(tmp_path / "bad.npy")


# ---------------------------------------------------------------- Lengths / from_array
def test_from_array_and_lengths_helpers() -> None:
    lens = from_array([4, 2, 9], tgt=np.array([1.0, 5.0, 3.0]))
    assert lens.src.tolist() == [4, 2, 9] and lens.num_tokens().tolist() == [4, 5, 9]
    sub = lens.take([2, 0])
    assert sub.src.tolist() == [9, 4] and sub.tgt is not None and sub.tgt.tolist() == [3, 1]
    d = lens.describe()
    assert d["src"] == {"total": 15, "min": 2, "mean": 5.0, "max": 9}
    assert len(lens) == lens.n_samples == 3 and lens.tgt is not None


@pytest.mark.parametrize(
    ("src", "tgt", "match"),
    [
        ([], None, "holds no samples"),
        ([1, 0], None, r"sample 1: source length is 0 \(zero\)"),
        ([1, -2], None, r"sample 1: source length is -2 \(negative\)"),
        ([1.5], None, r"sample 0: source length 1.5 is not an integer"),
        ([np.nan], None, r"sample 0: source length is nan"),
        ([[1, 2]], None, "must be a 1-D sequence"),
        (["a"], None, "must be numbers"),
        ([1, 2], [1], "2 source lengths but 1 target lengths"),
        ([1, 2], [1, 0], r"sample 1: target length is 0"),
    ],
)
def test_from_array_rejects_bad_lengths(src: list, tgt: list | None, match: str) -> None:
    with pytest.raises(InputError, match=match):
        from_array(src, tgt)


def test_from_array_torch_tensor() -> None:
    torch = pytest.importorskip("torch")
    assert from_array(torch.tensor([3, 1])).src.tolist() == [3, 1]


def test_lengths_is_frozen() -> None:
    lens = Lengths(src=np.array([1]))
    with pytest.raises(AttributeError):
        lens.src = np.array([2])  # type: ignore[misc]


# ---------------------------------------------------------------- dispatcher
def test_the_format_is_inferred_from_the_name_and_a_csv_header(tmp_path: Path) -> None:
    assert read_lengths(write(tmp_path / "a.csv", "length\n7\n")).src.tolist() == [7]
    assert read_lengths(write(tmp_path / "h.csv.gz", "length,count\n4,2\n", gz=True)).src.tolist() == [4, 4]
    assert read_lengths(write(tmp_path / "m.jsonl.gz", '{"duration": 0.05}\n', gz=True)).src.tolist() == [5]
    np.savez(tmp_path / "x.npz", src=np.array([3, 9]))
    assert read_lengths(tmp_path / "x.npz").src.tolist() == [3, 9]
    assert read_lengths(write(tmp_path / "x.txt", "a b c\n")).src.tolist() == [3]
    both = read_lengths(write(tmp_path / "x.de", "a b\n"), tgt=write(tmp_path / "x.en", "c\n"))
    assert (both.src.tolist(), both.tgt.tolist() if both.tgt is not None else None) == ([2], [1])


def test_read_lengths_dispatch_and_errors(tmp_path: Path) -> None:
    csv_p = write(tmp_path / "a.csv", "n\n320\n")
    assert read_lengths(csv_p, column="n", sample_rate=16000).src.tolist() == [2]
    txt = write(tmp_path / "a.txt", "a b\n")
    assert read_lengths(txt).src.tolist() == [2]
    assert read_lengths(txt, format="parallel", tgt=txt).tgt is not None
    with pytest.raises(ConfigError, match=r"'text' reader does not take 'scale'; it takes"):
        read_lengths(txt, scale=2.0)
    with pytest.raises(ConfigError, match="Unknown length format 'xml'. Valid formats: csv"):
        read_lengths(txt, format="xml")
    with pytest.raises(ConfigError, match="needs the target file"):
        read_lengths(txt, format="parallel")
    with pytest.raises(ConfigError, match="only applies to csv, histogram and jsonl"):
        read_lengths(txt, column="x")
    with pytest.raises(InputError, match="no such file"):
        read_lengths(tmp_path / "missing.csv")
    with pytest.raises(ConfigError, match="already a complete length source"):
        read_lengths("bundled:multi30k-en-de", column="x")
