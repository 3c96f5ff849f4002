"""``seqpoint schedule``: the command-line contract, and one clean error line per bad input."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from seqpoint.cli import main
from seqpoint.exceptions import ConfigError
from seqpoint.schedule import read_schedule
from seqpoint.workflows import parse_set

#: The schedule file's columns, in order: the file format.
COLUMNS = ("iteration", "epoch", "batch_size", "seq_len", "tgt_len", "tokens", "padded_tokens", "sum_sq_len")


def test_schedule_csv_from_bundled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s.csv"
    rc = main(
        ["schedule", "bundled:librispeech-dev-clean", "--policy", "sortagrad", "--batch-size", "32",
         "--epochs", "2", "--seed", "3", "-o", str(out)]
    )
    assert rc == 0
    assert out.read_text().split("\n", 1)[0] == ",".join(COLUMNS)
    sched = read_schedule(out)
    assert len(sched) == 2 * 85 and sched.n_epochs == 2
    text = capsys.readouterr().out
    for needle in ("iterations", "unique signatures", "padding ratio", "seq_len min / mean / max", "histogram"):
        assert needle in text


def test_schedule_parquet_token_budget_parallel(tmp_path: Path) -> None:
    src = tmp_path / "s.txt"
    tgt = tmp_path / "t.txt"
    src.write_text("a b c\nd e\nf\ng h i j\n")
    tgt.write_text("x\ny y y\nz z\nw\n")
    out = tmp_path / "s.parquet"
    rc = main(
        ["schedule", str(src), "--tgt", str(tgt), "--policy", "token_budget", "--max-tokens", "8",
         "--set", "batching.params.shuffle=false", "-o", str(out)]
    )
    assert rc == 0
    sched = read_schedule(out)
    assert sched.meta["policy"] == "token_budget"
    assert int(sched.batch_size.sum()) == 4
    assert np.all(sched.batch_size * np.maximum(sched.seq_len, sched.tgt_len) <= 8)


def test_schedule_csv_with_sample_rate_and_flags(tmp_path: Path) -> None:
    lengths = tmp_path / "l.csv.gz"
    lengths.write_bytes(gzip.compress(b"path,samples\na,16000\nb,32000\nc,8000\nd,1600\n", mtime=0))
    out = tmp_path / "s.csv"
    rc = main(
        ["schedule", str(lengths), "--column", "samples", "--sample-rate", "16000", "--policy", "sorted",
         "--batch-size", "2", "--pad-to-multiple-of", "64", "--set", "batching.params.descending=true", "-o", str(out)]
    )
    assert rc == 0
    assert read_schedule(out).seq_len.tolist() == [256, 64]  # frames 200,100 | 50,10 rounded to 64


def test_schedule_packing_and_dynamic_bucket(tmp_path: Path) -> None:
    out = tmp_path / "p.csv"
    assert main(["schedule", "bundled:wikitext-2-valid", "--policy", "packing", "--max-seq-len", "512",
                 "--batch-size", "4", "-o", str(out)]) == 0
    sched = read_schedule(out)
    assert set(sched.seq_len.tolist()) == {512}
    assert main(["schedule", "bundled:librispeech-test-clean", "--policy", "dynamic_bucket",
                 "--max-duration", "20000", "--num-buckets", "10", "--drop-last", "-o", str(out)]) == 0
    assert read_schedule(out).meta["params"]["drop_last"] is True


def test_parse_set() -> None:
    # One grammar: a TOML value, else the bare word as a string (TOML has no null).
    assert parse_set(["a=1", "b=true", "c=none", "d=x y", "e-f=2.5"]) == {
        "a": 1, "b": True, "c": "none", "d": "x y", "e_f": 2.5
    }
    assert parse_set(["dtype=bf16", " threads = 2 ", "descending=true", "time_strides=[2,2]",
                      'name="a b"', "x=1\ny=2"]) == {
        "dtype": "bf16", "threads": 2, "descending": True, "time_strides": [2, 2],
        "name": "a b", "x": "1\ny=2",
    }
    with pytest.raises(ConfigError, match="--set expects KEY=VALUE"):
        parse_set(["novalue"])
    with pytest.raises(ConfigError, match="--set-b expects KEY=VALUE"):
        parse_set(["=1"], option="--set-b")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from seqpoint.cli import main; sys.exit(main())", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def bad_files(tmp: Path) -> dict[str, list[str]]:
    def csv(name: str, body: str) -> str:
        p = tmp / name
        p.write_text(body)
        return str(p)

    broken = tmp / "broken.csv.gz"
    broken.write_bytes(gzip.compress(b"length\n" + b"12\n" * 500, mtime=0)[:20])  # truncated stream
    out = str(tmp / "o.csv")
    base = ["--policy", "fixed", "-o", out]
    return {
        "missing file": ["schedule", str(tmp / "nope.csv"), *base],
        "unreadable gzip": ["schedule", str(broken), *base],
        "missing column": ["schedule", csv("a.csv", "length\n3\n"), "--column", "dur", *base],
        "non-integer": ["schedule", csv("b.csv", "length\n3\n2.5\n"), *base],
        "negative": ["schedule", csv("c.csv", "length\n3\n-2\n"), *base],
        "zero": ["schedule", csv("d.csv", "length\n3\n0\n"), *base],
        "NaN": ["schedule", csv("e.csv", "length\n3\nnan\n"), *base],
        "empty input": ["schedule", csv("f.csv", "length\n"), *base],
        "unknown policy": ["schedule", csv("g.csv", "length\n3\n"), "--policy", "magic", "-o", out],
        "batch size < 1": ["schedule", csv("h.csv", "length\n3\n"), "--batch-size", "0", *base],
        "max_tokens too small": [
            "schedule", csv("i.csv", "length\n3\n90\n"), "--policy", "token_budget", "--max-tokens", "50", "-o", out
        ],
    }


EXPECT = {
    "missing file": r"nope\.csv: no such file",
    "unreadable gzip": r"cannot be decompressed",
    "missing column": r"no column 'dur'; its columns are 'length'",
    "non-integer": r"line 3: 'length' 2.5 is not an integer",
    "negative": r"line 3: 'length' is -2 \(negative\)",
    "zero": r"line 3: 'length' is 0 \(zero\)",
    "NaN": r"line 3: 'length' is nan",
    "empty input": r"no data rows",
    "unknown policy": r"Unknown batching policy 'magic'. Valid names: bucket, dynamic_bucket, fixed",
    "batch size < 1": r"The 'batch_size' parameter of FixedPolicy must be an int >= 1 and <= 16,777,216. Got 0.",
    "max_tokens too small": r"Sample 1 of .* has 90 tokens .* more than max_tokens=50; raise max_tokens to at least 90",
}


@pytest.mark.parametrize("case", list(EXPECT))
def test_bad_input_in_process(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(bad_files(tmp_path)[case])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert re.search(EXPECT[case], err), err


@pytest.mark.parametrize("case", list(EXPECT))
def test_bad_input_subprocess_one_line_exit_2(case: str, tmp_path: Path) -> None:
    proc = run_cli(*bad_files(tmp_path)[case])
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("seqpoint: error: ")
    assert "Traceback" not in proc.stderr
    assert re.search(EXPECT[case], lines[0]), lines[0]


def test_format_trace_reads_a_recorded_run_as_its_schedule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from seqpoint.schedule import RunTrace, read_schedule, write_trace

    trace = RunTrace(
        iteration=[0, 0, 1, 1], epoch=[0, 0, 0, 1], micro_batch=[0, 1, 0, 1],
        batch_size=[4, 4, 4, 2], seq_len=[16, 24, 8, 32], tgt_len=[0, 0, 0, 0],
        tokens=[50, 70, 30, 40], sum_sq_len=[700, 1500, 250, 900], time_s=[0.1, 0.2, 0.05, 0.25],
    )
    src = write_trace(trace, tmp_path / "trace.csv")
    out = tmp_path / "s.csv"
    assert main(["schedule", str(src), "--format", "trace", "-o", str(out)]) == 0
    sched = read_schedule(out)
    assert sched.seq_len.tolist() == [16, 24, 8, 32] and sched.batch_size.tolist() == [4, 4, 4, 2]
    with pytest.raises(SystemExit) as exc:
        main(["schedule", str(src), "--format", "trace", "--policy", "fixed", "-o", str(out)])
    assert exc.value.code == 2
    assert "--policy does not apply to --format trace" in capsys.readouterr().err
