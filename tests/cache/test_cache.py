"""The SQLite measurement cache: round trips, keys, WAL, SIGKILL resume, concurrent writers."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from seqpoint.cache import MeasurementCache, default_cache_path
from seqpoint.exceptions import InputError
from seqpoint.measurements import Measurement

ROOT = Path(__file__).resolve().parents[2]


def _m(seq_len: int, t: float = 0.5) -> Measurement:
    return Measurement(
        iteration=3,
        batch_size=2,
        seq_len=seq_len,
        tgt_len=1,
        sum_sq_len=7,
        metrics={"time_s": t, "flops": 1e9},
        breakdown_s={"gemm": 0.25},
        samples={"time_s": [t, t + 0.1]},
    )


def test_put_get_round_trip_and_wal(tmp_path) -> None:
    c = MeasurementCache(tmp_path / "sub" / "m.sqlite")
    k = c.key("bert:tiny", {"hidden": 32}, {"torch": "2"}, (2, 10, 1, 7), {"repeats": 5})
    assert len(k) == 64 and c.get(k) is None and k not in c
    c.put(k, _m(10))
    assert c.get(k) == _m(10) and k in c and len(c) == 1
    c.put(k, _m(10, 0.7))  # replacing keeps one row
    assert c.get(k).metrics["time_s"] == 0.7 and len(c) == 1
    mode = sqlite3.connect(c.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_key_depends_on_every_part() -> None:
    base = ("w", {"a": 1}, {"torch": "2"}, (2, 10, 0), {"repeats": 5})
    k0 = MeasurementCache.key(*base)
    assert MeasurementCache.key(*base) == k0
    variants = [
        ("v", *base[1:]),
        (base[0], {"a": 2}, *base[2:]),
        (*base[:2], {"torch": "3"}, *base[3:]),
        (*base[:3], (2, 11, 0), base[4]),
        (*base[:4], {"repeats": 6}),
    ]
    assert len({MeasurementCache.key(*v) for v in variants} | {k0}) == 6
    # dict order does not matter
    assert MeasurementCache.key("w", {"a": 1, "b": 2}, {}, (1, 1, 0), {}) == MeasurementCache.key(
        "w", {"b": 2, "a": 1}, {}, (1, 1, 0), {}
    )


def test_list_clear_export(tmp_path) -> None:
    c = MeasurementCache(tmp_path / "m.sqlite")
    for i in range(3):
        c.put(f"k{i}", _m(10 + i), workload="a" if i < 2 else "b", signature=(2, 10 + i, 1))
    rows = c.list()
    assert [r.key for r in rows] == ["k0", "k1", "k2"]
    assert rows[0].signature == (2, 10, 1) and rows[0].measurement == _m(10)
    assert [r.key for r in c.list("b")] == ["k2"]
    out = c.export(tmp_path / "e.json", "a")
    data = json.loads(out.read_text())
    assert [e["key"] for e in data["entries"]] == ["k0", "k1"]
    assert Measurement.from_dict(data["entries"][1]["measurement"]) == _m(11)
    assert c.clear("a") == 2 and len(c) == 1
    assert c.clear() == 1 and len(c) == 0


def test_default_path_and_bad_paths(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SEQPOINT_CACHE", str(tmp_path / "x.sqlite"))
    assert default_cache_path() == tmp_path / "x.sqlite"
    assert MeasurementCache().path == tmp_path / "x.sqlite"
    monkeypatch.delenv("SEQPOINT_CACHE")
    assert default_cache_path() == Path.home() / ".cache" / "seqpoint" / "measurements.sqlite"
    with pytest.raises(InputError, match="is a directory"):
        MeasurementCache(tmp_path)
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InputError, match="is not a seqpoint measurement cache"):
        MeasurementCache(bad)


_WRITER = textwrap.dedent(
    """
    import sys
    from seqpoint.cache import MeasurementCache
    from seqpoint.measurements import Measurement
    path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    c = MeasurementCache(path)
    for i in range(n):
        m = Measurement(iteration=i, batch_size=1, seq_len=i + 1, metrics={"time_s": float(i)})
        c.put(f"{who}-{i}", m, workload=who)
        c.put(f"shared-{i % 10}", m, workload="shared")
    """
)


def test_two_processes_writing_one_cache_lose_nothing(tmp_path) -> None:
    path = tmp_path / "m.sqlite"
    MeasurementCache(path)
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), who, "100"], cwd=ROOT)
        for who in ("a", "b")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    c = MeasurementCache(path)
    assert len(c.list("a")) == 100 and len(c.list("b")) == 100
    assert len(c.list("shared")) == 10
    assert all(c.get(f"a-{i}").seq_len == i + 1 for i in range(100))


_CAMPAIGN = textwrap.dedent(
    """
    import sys, torch
    torch.set_num_threads(1)
    from seqpoint.cache import MeasurementCache
    from seqpoint.profiling import ProfileConfig, profile_points
    from seqpoint.workloads import load_workload
    sigs = [(2, 40 + 8 * i, 0) for i in range(int(sys.argv[2]))]
    wl = load_workload("deepspeech2:tiny")
    profile_points(wl, sigs, ProfileConfig(warmup=0, repeats=int(sys.argv[3])),
                   cache=MeasurementCache(sys.argv[1]), progress=False)
    """
)


def test_killed_campaign_resumes_and_measures_only_what_is_missing(tmp_path, monkeypatch) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "m.sqlite"
    n = 40
    proc = subprocess.Popen([sys.executable, "-c", _CAMPAIGN, str(path), str(n), "3"], cwd=ROOT)
    deadline = time.time() + 60
    done = 0
    while time.time() < deadline and proc.poll() is None:
        if path.exists():
            try:
                done = len(MeasurementCache(path))
            except InputError:
                done = 0
            if done >= 3:
                break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = len(MeasurementCache(path))
    assert 3 <= kept < n, "the campaign should have been killed part way"

    import torch

    from seqpoint.profiling import ProfileConfig, profile_points
    from seqpoint.workloads import load_workload

    torch.set_num_threads(1)
    sigs = [(2, 40 + 8 * i, 0) for i in range(n)]
    wl = load_workload("deepspeech2:tiny")
    batches: list[tuple[int, ...]] = []
    real = wl.make_batch

    def counting(sig):
        batches.append(tuple(sig))
        return real(sig)

    # every measured point builds its batch once; start-up shapes are none of the points
    monkeypatch.setattr(wl, "make_batch", counting)
    ms = profile_points(
        wl,
        sigs,
        ProfileConfig(warmup=0, repeats=3),
        cache=MeasurementCache(path),
        progress=False,
    )
    measured = [s for s in batches if s in set(sigs)]
    assert len(measured) == len(set(measured)) == n - kept
    assert ms.complete and len(ms.measurements) == n
    assert len(MeasurementCache(path)) == n


def test_corrupt_rows_and_files_are_one_line(tmp_path: Path) -> None:

    from seqpoint.cache import MeasurementCache
    from seqpoint.exceptions import InputError
    from seqpoint.measurements import Measurement

    cache = MeasurementCache(tmp_path / "c.sqlite")
    key = cache.key("w", {}, {}, (2, 5, 0), {})
    cache.put(key, Measurement(iteration=0, batch_size=2, seq_len=5, metrics={"time_s": 1.0}), workload="w")
    con = sqlite3.connect(tmp_path / "c.sqlite")
    con.execute("UPDATE measurements SET measurement = '{junk', signature = 'x'")
    con.commit()
    con.close()
    with pytest.raises(InputError, match=r"row [0-9a-f]{16}: line 1: invalid JSON.*seqpoint cache clear"):
        cache.get(key)
    with pytest.raises(InputError, match=r"row [0-9a-f]{16}: .*seqpoint cache clear"):
        cache.list()
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE measurements (a TEXT)")
    con.commit()
    con.close()
    with pytest.raises(InputError, match=r"not a seqpoint measurement cache or is damaged"):
        len(MeasurementCache(other)) + len(MeasurementCache(other).list())


def test_an_empty_file_is_not_taken_for_a_cache(tmp_path) -> None:
    empty = tmp_path / "typo.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="is an empty file, not a seqpoint measurement cache"):
        MeasurementCache(empty)
