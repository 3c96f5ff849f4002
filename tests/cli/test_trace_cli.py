"""``seqpoint validate --trace`` (recorded runs as the truth), ``seqpoint speedup --files``,
``seqpoint select --simpoints``: end to end through the real CLI."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from seqpoint.cli import main
from seqpoint.measurements import Measurement, Measurements, write_measurements
from seqpoint.schedule import RunTrace, read_trace, write_trace
from seqpoint.selection import SeqPointSelector, read_seqpoints, write_seqpoints

pytest.importorskip("torch")

#: The shared ``cli`` fixture (tests/conftest.py): ``(exit code, stdout, stderr)``.
Cli = Callable[[list[str]], tuple[int, str, str]]


def _trace(path: Path, scale: float) -> Path:
    rng = np.random.default_rng(0)
    n = 16
    seq = rng.integers(8, 40, size=n)
    return write_trace(RunTrace(
        iteration=np.arange(n), epoch=np.zeros(n, dtype=int), micro_batch=np.zeros(n, dtype=int),
        batch_size=np.full(n, 2), seq_len=seq, tgt_len=np.zeros(n, dtype=int), tokens=2 * seq,
        sum_sq_len=2 * seq * seq, time_s=scale * (1e-3 + 1e-5 * seq),
    ), path)


def test_validate_against_two_recorded_runs(tmp_path: Path, cli: Cli) -> None:
    t1, t2 = _trace(tmp_path / "a.csv", 1.0), _trace(tmp_path / "b.csv", 1.02)
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        'name = "t"\n[selection]\nn_points = 3\n[workload]\nname = "bert:tiny"\nset = { threads = 1 }\n'
        f'[profile]\nwarmup = 0\nrepeats = 1\nmetrics = ["time"]\ncache = "{tmp_path / "c.sqlite"}"\n'
        f'[report]\nout = "{tmp_path / "run"}"\nplots = false\nhtml = false\n'
    )
    code, out, err = cli(["validate", str(cfg), "--trace", str(t1), "--trace", str(t2), "--json", "-q"])
    assert code == 0, err
    res = json.loads(out)
    assert res["n_points"] == 3 and len(res["measured_runs_s"]) == 2
    assert res["noise_floor"] == pytest.approx(0.02 / 1.01, rel=1e-6)
    assert {"projected_s", "first_n_s", "first_n_error", "error"} <= set(res)
    assert (tmp_path / "run" / "trace_validation.json").is_file()
    code, out, err = cli(["validate", str(cfg), "--trace", str(t1), "-q"])
    assert code == 0 and "first 10" in out and "record a second" in out


def _trace_config(tmp_path: Path, tail: str = "") -> Path:
    """bert:tiny on 3 SeqPoints, one warm-up (the points' first steps) and one timed step each."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        'name = "t"\n[selection]\nn_points = 3\n[workload]\nname = "bert:tiny"\nset = { threads = 1 }\n'
        f'[profile]\nwarmup = 1\nrepeats = 1\nmetrics = ["time"]\ncache = "{tmp_path / "c.sqlite"}"\n{tail}'
    )
    return cfg


def test_cold_window_is_measured_on_the_trace_and_applied(tmp_path: Path, cli: Cli) -> None:
    t1, t2 = _trace(tmp_path / "a.csv", 1.0), _trace(tmp_path / "b.csv", 1.02)
    cfg = _trace_config(tmp_path)
    code, out, err = cli(["validate", str(cfg), "--trace", str(t1), "--trace", str(t2), "--json", "-q",
                          "-o", str(tmp_path / "plain"), "--set", "profile.cold_window=0"])
    assert code == 0, err
    plain = json.loads(out)
    assert plain["window"] is None and plain["projection"]["cold_term"]["method"] == "first_step"
    # The same points (from the cache) and the run's first 4 micro-batches timed in sequence.
    code, out, err = cli(["validate", str(cfg), "--trace", str(t1), "--trace", str(t2), "--json", "-q",
                          "-o", str(tmp_path / "windowed"), "--set", "profile.cold_window=4"])
    assert code == 0, err
    res = json.loads(out)
    assert len(res["window"]["times_s"]) == 4 and min(res["window"]["times_s"]) > 0
    assert res["window"]["signatures"] == [[2, int(n), 0] for n in np.random.default_rng(0).integers(8, 40, 16)[:4]]
    term = res["projection"]["cold_term"]
    # the points' first steps calibrate the cold term; the window measures the run against its projection
    assert term["method"] == "first_step" and res["projection"]["in_run_ratio"] > 0
    saved = json.loads((tmp_path / "windowed" / "trace_validation.json").read_text())
    assert saved["window"] == res["window"]
    code, out, err = cli(["validate", str(cfg), "--trace", str(t1), "-q", "-o", str(tmp_path / "text"),
                          "--set", "profile.cold_window=4"])
    assert code == 0, err
    assert "in-run ratio" in out and "the run's first 4 micro-batches timed in sequence against their projection" \
        in " ".join(out.split())


@pytest.mark.parametrize(("tail", "extra", "named"), [
    ('[lengths]\nsource = "bundled:librispeech-dev-clean"\n[batching]\npolicy = "fixed"\nepochs = 2\n'
     "[validation]\nruns = 3\n", [],
     "validate --trace does not read [lengths] source; [batching] policy, epochs; [validation] runs:"),
    ("", ["--set", "validation.baselines=[\"random\"]"], "does not read [validation] baselines:"),
    ("", ["--set", "projection.interconnect=nvlink4"], "does not read [projection] interconnect:"),
    ("", ["--no-exact"], "--no-exact skips the exact FLOP totals"),
])
def test_what_trace_validation_would_ignore_is_refused(tmp_path: Path, cli: Cli, tail: str, extra: list[str],
                                                         named: str) -> None:
    trace = _trace(tmp_path / "a.csv", 1.0)
    code, _, err = cli(["validate", str(_trace_config(tmp_path, tail)), "--trace", str(trace), *extra])
    assert code == 2 and len(err.strip().splitlines()) == 1 and named in err, err
    assert not (tmp_path / "c.sqlite").exists()  # refused before anything was measured


def test_a_trace_of_another_schedule_is_refused_before_anything_is_measured(tmp_path: Path, cli: Cli) -> None:
    t1 = _trace(tmp_path / "a.csv", 1.0)
    run = read_trace(t1)
    other = write_trace(dataclasses.replace(run, seq_len=run.seq_len + (np.arange(len(run)) == 5)), tmp_path / "b.csv")
    code, _, err = cli(["validate", str(_trace_config(tmp_path)), "--trace", str(t1), "--trace", str(other)])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"Trace 2 of 2 is not a run of this schedule: micro-batch 5 has seq_len {run.seq_len[5] + 1}, " in err
    assert not (tmp_path / "c.sqlite").exists()  # refused before anything was measured


def test_first_n_needs_a_trace_and_a_rank_picks_one_of_a_data_parallel_trace(tmp_path: Path, cli: Cli) -> None:
    cfg = _trace_config(tmp_path)
    code, _, err = cli(["validate", str(cfg), "--first-n", "3"])
    assert code == 2 and "--first-n sets the first-N estimate of a recorded run, read with --trace only" in err
    n = 8
    two = write_trace(RunTrace(
        iteration=np.repeat(np.arange(n // 2), 2), epoch=np.zeros(n, dtype=int), micro_batch=np.zeros(n, dtype=int),
        batch_size=np.full(n, 2), seq_len=np.full(n, 16), tgt_len=np.zeros(n, dtype=int), tokens=np.full(n, 32),
        sum_sq_len=np.full(n, 512), time_s=np.full(n, 1e-3), rank=np.tile([0, 1], n // 2),
    ), tmp_path / "ranks.csv")
    code, _, err = cli(["validate", str(cfg), "--trace", str(two)])
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "holds ranks [0, 1]" in err
    assert "world_size = 2 and rank = R (--set batching.world_size=2 --set batching.rank=R)" in err
    # The advice works, for every rank (a rank >= 1 was refused by world_size's default of 1).
    code, out, err = cli(["validate", str(cfg), "--trace", str(two), "--json",
                          "--set", "batching.world_size=2", "--set", "batching.rank=1"])
    assert code == 0, err
    assert json.loads(out)["n_iterations"] == n // 2


def test_speedup_from_two_measurement_files(tmp_path: Path, cli: Cli) -> None:
    trace = _trace(tmp_path / "a.csv", 1.0)
    from seqpoint.schedule import read_trace

    sched = read_trace(trace).to_schedule()
    points = SeqPointSelector(n_points=3).fit(sched).to_seqpoints(sched)
    sp = write_seqpoints(points, tmp_path / "p.json")
    paths = []
    for tag, t in (("a", 2.0), ("b", 1.0)):
        ms = Measurements(workload="w", measurements=tuple(
            Measurement(iteration=p.iteration, batch_size=p.batch_size, seq_len=p.seq_len,
                        metrics={"time_s": t * p.seq_len}) for p in points.points))
        paths.append(str(write_measurements(ms, tmp_path / f"m_{tag}.json")))
    code, out, err = cli(["speedup", "--files", str(trace), str(sp), *paths, "--json"])
    assert code == 0, err
    assert json.loads(out)["speedup"] == pytest.approx(2.0)
    code, out, _ = cli(["speedup", "--files", str(trace), str(sp), *paths])
    assert code == 0 and "steady state" in out and "whole run" not in out  # no first steps measured
    # the interval's parts: one worker process each, so their noise is combined as independent
    assert "methods' spread ± " in out and "(A's and B's combined as independent)" in out
    code, _, err = cli(["speedup", str(tmp_path / "c.toml"), "--files", str(trace), str(sp), *paths])
    assert code == 2 and len(err.strip().splitlines()) == 1
    # With first steps the whole runs are compared, and the steady state alone shown beside.
    firsts = []
    for tag, t, first in (("a", 2.0, 2.0), ("b", 1.0, 8.0)):
        ms = Measurements(workload="w", measurements=tuple(
            Measurement(iteration=p.iteration, batch_size=p.batch_size, seq_len=p.seq_len,
                        metrics={"time_s": t * p.seq_len, "time_s_first": first * t * p.seq_len})
            for p in points.points))
        firsts.append(str(write_measurements(ms, tmp_path / f"f_{tag}.json")))
    code, out, err = cli(["speedup", "--files", str(trace), str(sp), *firsts, "--json"])
    got = json.loads(out)
    assert code == 0 and got["metric"] == "run_time_s" and got["steady_speedup"] == pytest.approx(2.0)
    assert got["speedup"] < 2.0
    code, out, _ = cli(["speedup", "--files", str(trace), str(sp), *firsts])
    assert code == 0 and "whole run" in out and "steady state alone" in out


def test_select_writes_simpoint_files(tmp_path: Path, cli: Cli) -> None:
    sched = tmp_path / "s.csv"
    assert main(["schedule", "bundled:librispeech-dev-clean", "--policy", "fixed", "--batch-size", "16",
                 "-o", str(sched)]) == 0
    code, _, err = cli(["select", str(sched), "-k", "4", "-o", str(tmp_path / "p.json"),
                         "--simpoints", str(tmp_path / "run")])
    assert code == 0, err
    points = read_seqpoints(tmp_path / "p.json")
    n = points.n_iterations
    assert (tmp_path / "run.simpoints").read_text() == "".join(f"{p.iteration} {i}\n" for i, p in enumerate(points.points))
    assert (tmp_path / "run.weights").read_text() == "".join(f"{p.weight / n!r} {i}\n" for i, p in enumerate(points.points))


def test_run_on_a_schedule_file_instead_of_a_policy(tmp_path: Path, cli: Cli) -> None:
    trace = _trace(tmp_path / "a.csv", 1.0)
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'name = "t"\n[batching]\nschedule = "{trace}"\n[selection]\nn_points = 3\n'
        '[workload]\nname = "bert:tiny"\nset = { threads = 1 }\n'
        f'[profile]\nwarmup = 0\nrepeats = 1\nmetrics = ["time", "flops"]\ncache = "{tmp_path / "c.sqlite"}"\n'
        f'[report]\nout = "{tmp_path / "run"}"\nplots = false\nhtml = false\n'
    )
    code, out, err = cli(["run", str(cfg), "--json", "-q"])
    assert code == 0, err
    res = json.loads(out)
    assert res["n_iterations"] == 16 and res["n_points"] == 3
    cfg.write_text(f'[batching]\nschedule = "{tmp_path / "missing.csv"}"\n')
    code, out, err = cli(["run", str(cfg), "-q"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "missing.csv" in err


def _tiny_config(tmp_path: Path, samples: int, tail: str = "") -> Path:
    """A DeepSpeech2 ``tiny`` run of ``samples`` utterances in batches of 16, timed once per point."""
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'name = "t"\n[lengths]\nsource = "bundled:librispeech-dev-clean"\nmax_samples = {samples}\n'
        '[batching]\npolicy = "fixed"\nepochs = 1\nparams = { batch_size = 16 }\n'
        '[selection]\nn_points = 2\n[workload]\nname = "deepspeech2:tiny"\nset = { threads = 1 }\n'
        '[profile]\nwarmup = 0\nrepeats = 1\nmetrics = ["time"]\nuse_cache = false\n' + tail
    )
    return cfg


def test_run_warns_of_what_it_does_not_use(tmp_path: Path, cli: Cli) -> None:
    cfg = _tiny_config(tmp_path, 32, '[report]\nplots = false\nhtml = false\n')
    out = tmp_path / "run"
    # [validation] is validate's: an override of it on run warns instead of passing unseen
    code, _, err = cli(["run", str(cfg), "-o", str(out), "-q", "--set", "validation.runs=7"])
    assert code == 0, err
    assert "--set 'validation.runs=7': [validation] is read by seqpoint validate, not by run" in err
    assert "already holds" not in err
    # run again into its folder (a resumed run): nothing to say
    code, _, err = cli(["run", str(cfg), "-o", str(out), "-q"])
    assert code == 0, err
    assert "already holds" not in err
    # another command into the same folder: the first one's files may stay beside its own
    code, printed, err = cli(["validate", str(cfg), "-o", str(out), "-q", "--no-exact", "--set", "validation.runs=1",
                              "--set", "profile.repeats=3"])
    assert code == 0, err
    assert f"The run folder {out} already holds" in " ".join(err.split()) and "of seqpoint run (" in err
    # a 2-iteration part costs less than profiling its SeqPoints: the reduction says so
    assert "(below 1: profiling the SeqPoints took more steps than this part of the run has" in " ".join(printed.split())


@pytest.mark.slow  # full runs in fresh processes: make test-slow
def test_speedup_validate_prints_the_measured_speedup(tmp_path: Path, cli: Cli) -> None:
    cfg = _tiny_config(tmp_path, 48, f'[validation]\nruns = 2\n[report]\nout = "{tmp_path / "run"}"\n'
                                     'plots = false\nhtml = false\n')
    code, out, err = cli(["speedup", str(cfg), "--set-b", "workload.set.rnn_hidden=32", "--validate", "-q"])
    assert code == 0, err
    assert "measured (full runs A / B, 2 round(s)" in out and "Projection error" in out
    saved = json.loads((tmp_path / "run" / "speedup.json").read_text())
    m = saved["measured"]
    assert len(m["runs_a_s"]) == len(m["runs_b_s"]) == 2 and m["noise_floor"] >= 0
    assert m["error"] == pytest.approx((saved["speedup"] - m["speedup"]) / m["speedup"])
    # an interval that holds the measured speedup agrees with it; agreement counts the truth's error too
    assert isinstance(m["agrees_within_error"], bool) and (m["agrees_within_error"] or not m["interval_holds"])
    # each round's own ratio is printed beside the floor (a drift between rounds widens the floor)
    rounds = ", ".join(f"{a / b:.3f}×" for a, b in zip(m["runs_a_s"], m["runs_b_s"], strict=True))
    assert f"(each round's A/B: {rounds})" in " ".join(out.split())
    # --files measures nothing, so it cannot be validated: one line, exit 2
    code, _, err = cli(["speedup", "--files", str(cfg), str(cfg), str(cfg), str(cfg), "--validate"])
    assert code == 2 and "--validate" in err and len(err.strip().splitlines()) == 1


def test_speedup_set_overrides_a_and_the_b_made_from_it(tmp_path: Path, cli: Cli) -> None:
    cfg = _tiny_config(tmp_path, 48, f'[report]\nout = "{tmp_path / "run"}"\nplots = false\nhtml = false\n')
    code, out, err = cli(["speedup", str(cfg), "--set", "workload.set.rnn_hidden=24",
                          "--set-b", "workload.set.dtype=bf16", "--json"])
    assert code == 0, err
    saved = json.loads(out)
    assert saved["run_folder"] == str(tmp_path / "run") and saved["in_turn"] is False
    a, b = ((tmp_path / "run" / f"config_{t}.toml").read_text() for t in "ab")
    assert "rnn_hidden = 24" in a and "rnn_hidden = 24" in b  # B is A with --set-b
    assert 'dtype = "bf16"' in b and 'dtype = "bf16"' not in a
    code, _, err = cli(["speedup", "--files", str(cfg), str(cfg), str(cfg), str(cfg), "--set", "profile.repeats=3"])
    assert code == 2 and "--set" in err and len(err.strip().splitlines()) == 1
