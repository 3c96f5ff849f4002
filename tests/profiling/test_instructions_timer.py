"""The ``instructions`` timer: a step's user-space instruction count under callgrind, in a
worker process, stored as ``instructions`` (not seconds) and keyed apart from clock times."""

from __future__ import annotations

import os
import shutil
import time

import pytest

torch = pytest.importorskip("torch")

from seqpoint.clocks import step_timer  # noqa: E402
from seqpoint.exceptions import ConfigError  # noqa: E402
from seqpoint.profiling import STARTUP_STEPS, ProfileConfig, Profiler, profile_points  # noqa: E402
from seqpoint.testing import ToyWorkload  # noqa: E402

DUMP = """version: 1
creator: callgrind-3.19.0
cmd:  python -c
events: Ir
summary: 7288123
totals: 7288123
"""


def test_a_dump_s_summary_line_is_the_step_s_count(monkeypatch, tmp_path) -> None:
    # The timer's body in a worker, with callgrind's toggles replaced by one that writes a dump.
    dumps = iter([DUMP, "events: Ir\ntotals: 12\n"])
    monkeypatch.setenv("SEQPOINT_CALLGRIND_DIR", str(tmp_path))
    monkeypatch.setattr(torch._C, "_valgrind_toggle", lambda: None)
    monkeypatch.setattr(torch._C, "_valgrind_toggle_and_dump_stats",
                        lambda: (tmp_path / f"callgrind.out.{os.getpid()}.1").write_text(next(dumps)))
    clock = step_timer("instructions", ["cpu"])
    assert clock(lambda: None) == 7288123.0
    assert list(tmp_path.iterdir()) == []  # the dump read is removed
    with pytest.raises(ValueError, match="no 'summary: <count>' line"):
        clock(lambda: None)


def test_the_cache_key_names_the_timer_and_the_counted_code_path() -> None:
    counted = ProfileConfig(timer="instructions").to_dict()
    assert counted["timer"] == "instructions" and "avx2" in counted["counted_isa"]
    assert "counted_isa" not in ProfileConfig().to_dict()  # clock keys are as before


def test_a_count_is_taken_in_a_worker_and_its_steps_are_counted() -> None:
    counted = ProfileConfig(timer="instructions", warmup=2, repeats=3, drift_steps=1)
    assert counted.in_workers and not ProfileConfig().in_workers
    assert counted.protocol_steps() == STARTUP_STEPS + 2 * 1 + 1  # one worker's start-up and checks
    assert counted.point_steps() == (2, 3, 0)


def test_counting_needs_a_worker_under_callgrind() -> None:
    w = ToyWorkload(ToyWorkload.Config(threads=1))
    with pytest.raises(ConfigError, match="only in a worker process started under callgrind"):
        Profiler(w).point((2, 8, 0), ProfileConfig(timer="instructions", warmup=0, repeats=1))


def test_without_valgrind_one_line_names_the_package(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no valgrind here
    w = ToyWorkload(ToyWorkload.Config(threads=1))
    with pytest.raises(ConfigError, match=r"apt-get install valgrind") as info:
        profile_points(w, [(2, 8, 0)], ProfileConfig(timer="instructions", repeats=1), progress=False)
    assert "\n" not in str(info.value)


@pytest.mark.callgrind  # the one callgrind check of `make test`; the full run's is `make test-slow`'s
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_campaign_counts_instructions_under_callgrind() -> None:
    """The one test that really runs callgrind: a toy model, two points, a worker process."""
    w = ToyWorkload(ToyWorkload.Config(threads=1))
    config = ProfileConfig(timer="instructions", warmup=2, repeats=3, drift_steps=1)
    t0 = time.perf_counter()
    ms = profile_points(w, [(2, 16, 0), (4, 32, 0)], config, progress=False)
    print(f"callgrind campaign: {time.perf_counter() - t0:.0f} s")
    small, large = ms.measurements
    for m in ms.measurements:
        assert m.ok, m.message
        assert "time_s" not in m.metrics and "time_s" not in m.samples
        counts = m.samples["instructions"]
        assert len(counts) == 3 and min(counts) > 1e4
        assert max(counts) / min(counts) - 1 < 0.02  # repeats agree: a count, not a clock
        assert m.metrics["instructions"] == sorted(counts)[1]
        assert m.metrics["instructions_first"] > m.metrics["instructions"]  # a new shape's first step
    assert large.metrics["instructions"] > small.metrics["instructions"]


@pytest.mark.slow
@pytest.mark.callgrind
@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_full_run_is_counted_under_callgrind() -> None:
    """``validate``'s truth with this timer: every step of a run counted, in a fresh process
    started under callgrind, and the drift check point counted after it."""
    from seqpoint.schedule import IterationSchedule
    from seqpoint.validation import run_full_fresh

    s = IterationSchedule.from_columns({"batch_size": [2, 4, 2, 2], "seq_len": [16, 32, 16, 16]})
    t0 = time.perf_counter()
    run = run_full_fresh("seqpoint.testing:ToyWorkload", {"threads": 1}, s, runs=1, warmup=1,
                         timer="instructions", check=(4, 32, 0))
    print(f"counted full run: {time.perf_counter() - t0:.0f} s")
    assert run.metric == "instructions" and run.to_dict()["metric"] == "instructions"
    counts = run.iteration_s[0]
    assert min(counts) > 1e4
    assert counts[1] > counts[2]  # the larger shape executes more
    check = run.check_s[0]  # one shape three times in a row: a count (the allocator and the GC move it ~2%)
    assert check.shape == (3,) and max(check) / min(check) - 1 < 0.05
