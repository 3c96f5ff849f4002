"""``seqpoint select`` and ``seqpoint project``: outputs, the JSON contract, every bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from seqpoint.measurements import Measurement, Measurements, write_measurements
from seqpoint.schedule import IterationSchedule, write_schedule
from seqpoint.selection import SELECTORS, read_seqpoints

Cli = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    sched = IterationSchedule.from_columns({"batch_size": np.full(300, 8), "seq_len": rng.integers(10, 200, 300)})
    write_schedule(sched, tmp_path / "s.csv")
    return {"schedule": tmp_path / "s.csv", "dir": tmp_path}


def measurements_for(seqpoints: Path, path: Path, *, drop: int | None = None) -> Path:
    sp = read_seqpoints(seqpoints)
    ms = [
        Measurement(iteration=p.iteration, batch_size=p.batch_size, seq_len=p.seq_len,
                    metrics={"time_s": 0.001 * p.batch_size * p.seq_len, "flops": 1e6 * p.seq_len})
        for i, p in enumerate(sp.points) if i != drop
    ]
    write_measurements(Measurements(workload="t", measurements=tuple(ms)), path)
    return path


def test_select_writes_seqpoints_and_table(files: dict[str, Path], cli: Cli) -> None:
    out = files["dir"] / "sp.json"
    code, stdout, _ = cli(["select", str(files["schedule"]), "-k", "4", "-o", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["method"] == "seqpoint" and data["n_iterations"] == 300
    assert len(data["points"]) == 4
    assert set(data["points"][0]) == {"iteration", "batch_size", "seq_len", "tgt_len", "weight"}
    assert sum(p["weight"] for p in data["points"]) == 300
    assert "iteration" in stdout and "share" in stdout and "estimated error" in stdout


@pytest.mark.parametrize("method", SELECTORS.names())
def test_select_every_method(method: str, files: dict[str, Path], cli: Cli) -> None:
    out = files["dir"] / f"{method}.json"
    code, _, err = cli(["select", str(files["schedule"]), "--method", method, "-k", "3", "--seed", "1", "-o", str(out)])
    assert code == 0, err
    assert read_seqpoints(out).method == method


def test_select_max_error(files: dict[str, Path], cli: Cli) -> None:
    out = files["dir"] / "sp.json"
    code, _, _ = cli(["select", str(files["schedule"]), "--max-error", "0.01", "-o", str(out)])
    assert code == 0
    assert read_seqpoints(out).meta["estimated_error"] <= 0.01


def test_select_proxy_auto_is_attention_without_a_workload(files: dict[str, Path], cli: Cli) -> None:
    paths = [files["dir"] / f"{name}.json" for name in ("auto", "attention")]
    for proxy, out in zip(("auto", "attention"), paths, strict=True):
        assert cli(["select", str(files["schedule"]), "-k", "4", "--proxy", proxy, "-o", str(out)])[0] == 0
    auto, attention = (read_seqpoints(p) for p in paths)
    assert auto.points == attention.points and auto.meta == attention.meta


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-k", "0"], "The 'n_points' parameter of [selection] must be an int >= 1. Got 0."),
        (["-k", "301"], "-k 301 exceeds the 300 iterations of"),
        (["--max-error", "0"], "The 'max_error' parameter of [selection] must be a fraction in (0, 1) or None. Got 0.0."),
        (["--max-error", "-0.5"], "The 'max_error' parameter of [selection] must be a fraction in (0, 1)"),
        (["-k", "2", "--max-error", "0.1"], "Give exactly one of -k N and --max-error FRACTION."),
        ([], "Give exactly one of -k N and --max-error FRACTION."),
        (["-k", "2", "--method", "best"], "Unknown selection method 'best'. Valid names: first, mean, median, mode, random, seqpoint, simpoint, stratified, stride."),
        (["--max-error", "0.1", "--method", "first"], "max_error selects k for the 'seqpoint' method only"),
        (["-k", "2", "--proxy", "flops"], "[selection] proxy = 'flops' is not a cost proxy; use one of attention, quadratic, seq_len, tokens"),
        (["-k", "2", "--proxy", "model"], "--proxy model is the profiled model's cost, which needs a workload"),
        (["-k", "2", "--grouping", "kmeans"], "The 'grouping' parameter of SeqPointSelector must be one of 'optimal', 'sl_bins'. Got 'kmeans'."),
        # options a method does not read are refused, not silently dropped
        (["-k", "2", "--method", "stride", "--proxy", "tokens"], "proxy = 'tokens' needs method = 'seqpoint' or 'stratified' (got 'stride')"),
        (["-k", "2", "--method", "stratified", "--grouping", "sl_bins"], "--grouping applies to --method seqpoint, not 'stratified'"),
    ],
)
def test_select_bad_input(args: list[str], message: str, files: dict[str, Path], cli: Cli) -> None:
    code, _, err = cli(["select", str(files["schedule"]), *args, "-o", str(files["dir"] / "x.json")])
    assert code == 2
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_select_missing_and_bad_schedule(files: dict[str, Path], cli: Cli) -> None:
    code, _, err = cli(["select", str(files["dir"] / "nope.csv"), "-k", "2", "-o", "x.json"])
    assert code == 2 and "does not exist" in err and err.count("\n") == 1


@pytest.fixture
def selected(files: dict[str, Path], cli: Cli) -> dict[str, Path]:
    sp = files["dir"] / "sp.json"
    assert cli(["select", str(files["schedule"]), "-k", "5", "-o", str(sp)])[0] == 0
    files["seqpoints"] = sp
    files["measurements"] = measurements_for(sp, files["dir"] / "m.json")
    return files


def test_project_json_contract(selected: dict[str, Path], cli: Cli) -> None:
    for method in ("weighted", "interpolated"):
        code, out, _ = cli(["project", str(selected["schedule"]), str(selected["seqpoints"]),
                            str(selected["measurements"]), "--json", "--method", method])
        assert code == 0
        data = json.loads(out)
        assert {"n_iterations", "projected", "interval", "method"} <= set(data)
        assert data["n_iterations"] == 300 and data["method"] == method
        assert set(data["projected"]) == {"flops", "time_s"}
        lo, hi = data["interval"]["time_s"]
        assert lo <= data["projected"]["time_s"] <= hi
    # flops ∝ seq_len is linear in tokens at a fixed batch: interpolation is exact.
    from seqpoint.schedule import read_schedule

    sched = read_schedule(selected["schedule"])
    assert data["projected"]["flops"] == pytest.approx(1e6 * sched.seq_len.sum(), rel=1e-9)


def test_project_table(selected: dict[str, Path], cli: Cli) -> None:
    code, out, _ = cli(["project", str(selected["schedule"]), str(selected["seqpoints"]), str(selected["measurements"])])
    assert code == 0 and "time_s" in out and "low (95%)" in out


def test_project_bad_input(selected: dict[str, Path], cli: Cli) -> None:
    d = selected["dir"]
    s, sp, m = (str(selected[k]) for k in ("schedule", "seqpoints", "measurements"))
    (d / "bad.json").write_text("{not json")
    other = IterationSchedule.from_columns({"batch_size": np.full(300, 8), "seq_len": np.full(300, 7)})
    write_schedule(other, d / "other.csv")
    data = json.loads(selected["seqpoints"].read_text())
    data["points"][0]["iteration"] = 5000
    (d / "range.json").write_text(json.dumps(data))
    missing = measurements_for(selected["seqpoints"], d / "partial.json", drop=0)
    cases = [
        ([s, str(d / "nope.json"), m], "does not exist"),
        ([s, str(d / "bad.json"), m], "invalid JSON"),
        ([s, sp, str(d / "bad.json")], "invalid JSON"),
        ([str(d / "other.csv"), sp, m], f"{sp} does not fit {d / 'other.csv'}. SeqPoint 0"),
        ([str(d / "other.csv"), sp, m], "the SeqPoints belong to another schedule"),
        ([s, str(d / "range.json"), m], "which is not in the schedule (iterations 0..299)"),
        ([s, str(d / "range.json"), m], f"{d / 'range.json'} does not fit {s}"),
        ([s, sp, str(missing)], f"{missing} does not fit {sp}. The measurements have no entry for SeqPoint 0"),
        ([s, sp, m, "--method", "median"], "The 'method' parameter of [projection] must be one of 'weighted', 'interpolated'. Got 'median'."),
        ([s, sp, m, "--interconnect", "pcie4"], "--interconnect applies to data-parallel schedules (a rank column)"),
        ([s, sp, m, "--interconnect", "warp"], "[projection]: unknown interconnect 'warp'"),
        ([s, sp, m, "--allreduce-s", "5"], "--allreduce-s applies to data-parallel schedules"),
    ]
    for argv, message in cases:
        code, _, err = cli(["project", *argv])
        assert code == 2, argv
        assert message in err, (argv, err)
        assert err.count("\n") == 1 and "Traceback" not in err


def test_project_incomplete_warns(selected: dict[str, Path], cli: Cli) -> None:
    sp = read_seqpoints(selected["seqpoints"])
    ms = [
        Measurement(iteration=p.iteration, batch_size=p.batch_size, seq_len=p.seq_len,
                    status="oom" if i == 0 else "ok", metrics={} if i == 0 else {"time_s": 0.1 * p.seq_len})
        for i, p in enumerate(sp.points)
    ]
    path = write_measurements(Measurements(workload="t", measurements=tuple(ms)), selected["dir"] / "oom.json")
    code, out, err = cli(["project", str(selected["schedule"]), str(selected["seqpoints"]), str(path), "--json"])
    assert code == 0
    assert json.loads(out)["complete"] is False
    assert "failed; projected from the other points" in err


def test_select_reports_the_bound_honestly(files: dict[str, Path], cli: Cli) -> None:
    out = files["dir"] / "sp.json"
    code, text, err = cli(["select", str(files["schedule"]), "-k", "6", "-o", str(out)])
    assert code == 0, err
    meta = read_seqpoints(out).meta
    assert meta["calibrated_error"] < meta["estimated_error"]
    flat = " ".join(text.split())
    assert f"estimated error: <= {meta['estimated_error']:.3%} (count-weight basis bound, an upper-bound-style estimate)" in flat
    assert f"calibrated weights reproduce the basis totals to {meta['calibrated_error']:.3%}" in flat
    code, text, err = cli(["select", str(files["schedule"]), "--method", "stratified", "-k", "6", "-o", str(out)])
    assert code == 0, err
    assert "(95% half-width of the cost proxy's total under the sampling design)" in " ".join(text.split())
    assert "calibrated weights" not in text
