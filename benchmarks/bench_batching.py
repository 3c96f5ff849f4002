"""Batching replay speed: 10M samples (100 epochs of 100k lengths) -> schedule, per policy.

Also times the length readers on one million lines (text, JSON lines, CSV) and the
schedule reader on a million iterations, which must not be the bottleneck of a schedule. Goal: <= 2 s per policy on the reference machine.

Usage: ``.venv/bin/python benchmarks/bench_batching.py [--quick]``
(``--quick``: 10 epochs = 1M samples, fewer repeats).
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _results import bench_parser, header, write_section
from seqpoint.batching import make_policy
from seqpoint.schedule import read_schedule, write_schedule
from seqpoint.traces import Lengths, bundled_lengths, from_array, read_lengths

N_SAMPLES = 100_000

#: (label, policy, params, data set): budgets sized for LibriSpeech frames / WMT tokens.
CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("fixed", "fixed", {"batch_size": 32}, "speech"),
    ("sorted", "sorted", {"batch_size": 32}, "speech"),
    ("sortagrad", "sortagrad", {"batch_size": 32}, "speech"),
    ("bucket", "bucket", {"batch_size": 32, "num_buckets": 5}, "speech"),
    ("bucket (parallel)", "bucket", {"batch_size": 128, "num_buckets": 5}, "text"),
    ("token_budget", "token_budget", {"max_tokens": 40_000}, "speech"),
    ("token_budget (parallel)", "token_budget", {"max_tokens": 4096, "required_batch_size_multiple": 8}, "text"),
    ("group_by_length", "group_by_length", {"batch_size": 32}, "speech"),
    ("dynamic_bucket", "dynamic_bucket", {"max_duration": 20_000, "num_buckets": 30}, "speech"),
    ("packing", "packing", {"max_seq_len": 4096, "batch_size": 8}, "speech"),
]


def resample(lens: Lengths, n: int, seed: int) -> Lengths:
    idx = np.random.default_rng(seed).integers(0, lens.n_samples, size=n)
    return lens.take(idx)


def timed(fn: Callable[[], Any], repeats: int) -> tuple[list[float], Any]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def bench_policies(epochs: int, repeats: int) -> list[str]:
    data = {
        "speech": resample(bundled_lengths("librispeech-train-clean-100"), N_SAMPLES, 0),
        "text": resample(bundled_lengths("wmt-en-de-sample"), N_SAMPLES, 1),
    }
    rows = [
        f"{epochs} epochs x {N_SAMPLES:,} lengths = {epochs * N_SAMPLES:,} samples per replay; "
        "speech = LibriSpeech train-clean-100 frames resampled, text = WMT sample (src, tgt) "
        f"tokens resampled. Wall time of `policy.replay(...)` (plan + schedule columns), "
        f"{repeats} repeats: min, median and spread (max-min) as the noise floor.",
        "",
        "| policy | params | iterations | min s | median s | spread s | ≤ 2 s |",
        "|---|---|---:|---:|---:|---:|:-:|",
    ]
    for label, name, params, ds in CASES:
        pol = make_policy(name, **params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            times, sched = timed(lambda pol=pol, ds=ds: pol.replay(data[ds], epochs=epochs, seed=0), repeats)
        med = statistics.median(times)
        ok = "yes" if min(times) <= 2.0 else "no"
        ptxt = ", ".join(f"{k}={v}" for k, v in params.items())
        rows.append(
            f"| {label} | {ptxt} | {len(sched):,} | {min(times):.3f} | {med:.3f} | "
            f"{max(times) - min(times):.3f} | {ok} |"
        )
        print(rows[-1], flush=True)
    return rows


def bench_readers(n_lines: int, repeats: int) -> list[str]:
    rng = np.random.default_rng(2)
    base = gzip.decompress(
        Path(__file__).parents[1].joinpath("src/seqpoint/data/multi30k-en-de/train.de.gz").read_bytes()
    )
    lines = base.decode().splitlines()
    reps = -(-n_lines // len(lines))
    text = ("\n".join(lines) + "\n") * reps
    text = "\n".join(text.split("\n")[:n_lines]) + "\n"
    durations = rng.uniform(1.0, 25.0, size=n_lines).round(3)
    rows = [
        "",
        f"Readers on {n_lines:,} lines ({repeats} repeats; min / median s):",
        "",
        "| reader | file | min s | median s |",
        "|---|---|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "text.txt").write_text(text)
        (t / "m.jsonl").write_text("".join(json.dumps({"audio": f"a{i}.flac", "duration": float(d)}) + "\n" for i, d in enumerate(durations)))
        (t / "l.csv").write_text("path,length\n" + "".join(f"a{i}.flac,{int(d * 16000)}\n" for i, d in enumerate(durations)))
        # One iteration per line: a schedule as long as the length files.
        write_schedule(make_policy("fixed", batch_size=1).replay(from_array((durations * 100).astype(int)), seed=0), t / "s.csv")
        cases: list[tuple[str, str, Callable[[], Any]]] = [
            ("read_text_lengths (whitespace)", "text.txt", lambda: read_lengths(t / "text.txt", format="text", skip_empty=True)),
            ("read_jsonl_lengths (duration → frames)", "m.jsonl", lambda: read_lengths(t / "m.jsonl", format="jsonl")),
            ("read_csv_lengths (samples → frames)", "l.csv", lambda: read_lengths(t / "l.csv", format="csv", sample_rate=16000)),
            ("read_schedule (checked schedule CSV)", "s.csv", lambda: read_schedule(t / "s.csv")),
        ]
        for label, name, fn in cases:
            times, out = timed(fn, repeats)
            assert (len(out) if name == "s.csv" else out.n_samples) == n_lines
            size = (t / name).stat().st_size / 1e6
            rows.append(f"| {label} | {name}, {size:.0f} MB | {min(times):.3f} | {statistics.median(times):.3f} |")
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = bench_parser(__doc__, quick="10 epochs (1M samples), fewer repeats")
    args = parser.parse_args()
    epochs = 10 if args.quick else 100
    repeats = 2 if args.quick else 3
    from_array([1])  # import warm-up outside the timings
    body = [header("Batching replay: 10M samples per policy, and 1M-line readers"), ""]
    body += bench_policies(epochs, repeats)
    body += bench_readers(1_000_000, repeats)
    path = write_section("batching", "\n".join(body) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
