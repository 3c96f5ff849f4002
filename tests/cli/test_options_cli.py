"""One vocabulary (STYLE rule 16): ``-o/--output``, ``-q/--quiet``, ``--json`` and ``--set
section.key=value`` on every command, and the old spellings, which still work with one
warning line (and none when the input is bad, whose error stays the one stderr line)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.measurements import Measurement, Measurements, write_measurements
from seqpoint.schedule import IterationSchedule, read_schedule, summarize, write_schedule
from seqpoint.selection import read_seqpoints
from seqpoint.workflows import load_config

Cli = Callable[[list[str]], tuple[int, str, str]]

BUNDLED = "bundled:librispeech-dev-clean"


def _error(err: str) -> str:
    """The one stderr line of a refused input, without its ``seqpoint: error:`` prefix."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("seqpoint: error: "), err
    return lines[0].removeprefix("seqpoint: error: ")


def _toml_error(tmp_path: Path, body: str) -> str:
    """What a run config file with ``body`` is refused with, without the file's name."""
    path = tmp_path / "bad.toml"
    path.write_text(f'[lengths]\nsource = "l.csv"\n{body}')
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    return str(exc.value).removeprefix(f"{path}: ")


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    path = tmp_path / "l.csv"
    rows = (f"{n},{160 * n}" for n in range(10, 400, 11))
    path.write_text("length,samples\n" + "\n".join(rows) + "\n")
    return path


# --- schedule ------------------------------------------------------------------------------


def test_schedule_json_is_its_summary(tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "s.csv"
    code, stdout, err = cli(["schedule", BUNDLED, "--policy", "fixed", "--batch-size", "16", "-o", str(out),
                             "--json", "-q"])
    assert code == 0 and err == ""
    data = json.loads(stdout)
    assert data == {"output": str(out), "policy": "fixed", "world_size": 1, "rank": None,
                    **summarize(read_schedule(out), bins=12).to_dict()}
    assert {"n_iterations", "n_epochs", "n_unique_signatures", "padding_ratio"} <= set(data)


def test_schedule_json_of_a_recorded_run(tmp_path: Path, cli: Cli) -> None:
    from seqpoint.schedule import RunTrace, write_trace

    trace = write_trace(RunTrace(iteration=[0, 1], epoch=[0, 0], micro_batch=[0, 0], batch_size=[4, 2],
                                 seq_len=[16, 8], tgt_len=[0, 0], tokens=[50, 12], sum_sq_len=[700, 100],
                                 time_s=[0.1, 0.2]), tmp_path / "t.csv")
    code, stdout, _ = cli(["schedule", str(trace), "--format", "trace", "-o", str(tmp_path / "s.csv"), "--json"])
    assert code == 0
    data = json.loads(stdout)
    assert data["policy"] is None and data["n_iterations"] == 2


@pytest.mark.parametrize(
    ("flags", "sets"),
    [
        (["--batch-size", "8"], ["batching.params.batch_size=8"]),
        (["--epochs", "2", "--seed", "3"], ["batching.epochs=2", "batching.seed=3"]),
        (["--world-size", "2", "--rank", "1"], ["batching.world_size=2", "batching.rank=1"]),
        (["--column", "samples", "--sample-rate", "16000"],
         ["lengths.column=samples", "lengths.params.sample_rate=16000"]),
        (["--format", "csv", "--scale", "0.5"], ["lengths.format=csv", "lengths.params.scale=0.5"]),
    ],
)
def test_schedule_set_takes_the_run_config_keys_of_its_flags(
    flags: list[str], sets: list[str], csv: Path, tmp_path: Path, cli: Cli
) -> None:
    base = ["schedule", str(csv), "--policy", "sortagrad", "--batch-size", "4"]
    code, _, warned = cli([*base, *flags, "-o", str(tmp_path / "flags.csv")])
    assert code == 0, warned
    code, _, err = cli([*base, *(a for s in sets for a in ("--set", s)), "-o", str(tmp_path / "set.csv")])
    assert code == 0 and err == warned
    assert (tmp_path / "flags.csv").read_text() == (tmp_path / "set.csv").read_text()


@pytest.mark.parametrize(
    ("item", "toml"),
    [
        ("batching.params.batch_size=0", '[batching]\npolicy = "fixed"\nparams = {batch_size = 0}\n'),
        ("batching.epochs=0", '[batching]\npolicy = "fixed"\nepochs = 0\n'),
        ("batching.shard=rows", '[batching]\npolicy = "fixed"\nshard = "rows"\n'),
        ("batching.rank=2", '[batching]\npolicy = "fixed"\nrank = 2\n'),
        ("lengths.format=xml", 'format = "xml"\n'),
    ],
)
def test_schedule_set_bad_value_gets_the_tomls_message(
    item: str, toml: str, csv: Path, tmp_path: Path, cli: Cli
) -> None:
    code, _, err = cli(["schedule", str(csv), "--policy", "fixed", "--set", item, "-o", str(tmp_path / "s.csv")])
    assert code == 2
    assert _error(err) == "--set overrides: " + _toml_error(tmp_path, toml)


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("batching.schedule=s.csv", "--set 'batching.schedule=s.csv': seqpoint schedule takes the keys of "
                                    "[lengths], [batching] but lengths.source, batching.policy, batching.schedule, "
                                    "which its arguments give"),
        ("selection.n_points=3", "--set 'selection.n_points=3': seqpoint schedule takes the keys of [lengths]"),
        ("batching.params.x.y=3", "--set overrides: key 'batching.params.x.y': 'x' is not a section or table"),
        ("batching.=3", "--set 'batching.=3' must look like section.key=value"),
        ("batch_size=8", "--set 'batch_size=8' must look like section.key=value (e.g. --set batching.params.KEY=VALUE)."),
        ("batch_size", "--set expects section.key=value, as in a run config (e.g. --set "
                       "batching.params.KEY=VALUE). Got 'batch_size'."),
        ("=3", "--set expects section.key=value"),
    ],
)
def test_schedule_set_refuses_keys_it_does_not_read(item: str, message: str, tmp_path: Path, cli: Cli) -> None:
    code, _, err = cli(["schedule", BUNDLED, "--policy", "fixed", "--set", item, "-o", str(tmp_path / "s.csv")])
    assert code == 2 and _error(err).startswith(message)


# --- select and project ----------------------------------------------------------------------


@pytest.fixture
def schedule(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    sched = IterationSchedule.from_columns({"batch_size": np.full(200, 8), "seq_len": rng.integers(10, 200, 200)})
    return write_schedule(sched, tmp_path / "s.csv")


def test_select_json(schedule: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "sp.json"
    code, stdout, err = cli(["select", str(schedule), "-k", "5", "-o", str(out), "--json", "-q",
                             "--simpoints", str(tmp_path / "run")])
    assert code == 0 and err == ""
    data = json.loads(stdout)
    points = read_seqpoints(out)
    assert data == {"output": str(out), "method": "seqpoint", "n_points": 5, "n_iterations": 200,
                    "estimated_error": points.meta["estimated_error"],
                    "calibrated_error": points.meta["calibrated_error"],
                    "simpoints": [str(tmp_path / "run.simpoints"), str(tmp_path / "run.weights")]}
    code, stdout, _ = cli(["select", str(schedule), "--method", "first", "-k", "3", "-o", str(out), "--json"])
    assert code == 0 and json.loads(stdout)["estimated_error"] is None


def test_project_takes_quiet(schedule: Path, tmp_path: Path, cli: Cli) -> None:
    sp = tmp_path / "sp.json"
    assert cli(["select", str(schedule), "-k", "4", "-o", str(sp), "-q"])[0] == 0
    ms = [Measurement(iteration=p.iteration, batch_size=p.batch_size, seq_len=p.seq_len,
                      metrics={"time_s": 1e-3 * p.seq_len}) for p in read_seqpoints(sp).points]
    meas = write_measurements(Measurements(workload="t", measurements=tuple(ms)), tmp_path / "m.json")
    code, stdout, err = cli(["project", str(schedule), str(sp), str(meas), "-q", "--json"])
    assert code == 0 and err == ""
    assert json.loads(stdout)["n_iterations"] == 200


# --- the commands that write a run folder ------------------------------------------------------


class _Result:
    """What a faked workflow returns: its run folder, as ``--json`` prints it."""

    def __init__(self, folder: object) -> None:
        self.folder = folder

    def to_dict(self) -> dict[str, Any]:
        return {"run_folder": str(self.folder)}


@pytest.fixture
def faked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A run config and a sweep file whose workflows only report the run folder they were given."""
    from seqpoint import workflows

    config = tmp_path / "c.toml"
    config.write_text(f'name = "t"\n[lengths]\nsource = "{BUNDLED}"\n[workload]\nname = "deepspeech2:tiny"\n')
    sweep = tmp_path / "sweep.toml"
    sweep.write_text('base = "c.toml"\n[axes]\n"workload.set.threads" = [1, 2]\n')

    def run(cfg: Any, **_: object) -> _Result:
        if cfg.name == "demo":  # the demo's first workflow: its runs go inside the folder given; stop there
            print(json.dumps({"run_folder": str(Path(cfg.report.out).parent)}))
            raise SystemExit(0)
        return _Result(cfg.report.out)

    monkeypatch.setattr(workflows, "run", run)
    monkeypatch.setattr(workflows, "validate", lambda cfg, **_: _Result(cfg.report.out))
    monkeypatch.setattr(workflows, "speedup", lambda a, b, **_: _Result(a.report.out))
    monkeypatch.setattr(workflows, "sweep", lambda spec, executor=None, *, out, **_: _Result(out))
    return {"config": config, "sweep": sweep}


COMMANDS = {
    "run": ["run", "{config}", "--json"],
    "validate": ["validate", "{config}", "--json"],
    "speedup": ["speedup", "{config}", "--set-b", "workload.set.threads=2", "--json"],
    "sweep": ["sweep", "{sweep}", "--json"],
    "demo": ["demo", "-q"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("flag", ["-o", "--output"])
def test_output_names_the_run_folder(command: str, flag: str, faked: dict[str, Path], cli: Cli,
                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = [a.format(**faked) for a in COMMANDS[command]]
    monkeypatch.chdir(tmp_path)
    folder = Path("123")  # a name that TOML would read as a number stays a path
    code, stdout, err = cli([*argv, flag, str(folder)])
    assert code == 0, err
    assert json.loads(stdout[stdout.index("{"):]) == {"run_folder": str(folder)}  # the demo prints its intro first
    assert err == ""


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "c.toml", "--out", "x"], "No such option: --out; use -o/--output. Run 'seqpoint run --help'."),
    (["select", "s.csv", "-o", "x", "--cost", "tokens"], "No such option: --cost; use --proxy. Run 'seqpoint select --help'."),
    (["profile", "p.json", "-o", "x", "--no-progress"], "No such option: --no-progress; use -q/--quiet."),
    (["profile", "p.json", "-o", "x", "--progress"], "No such option: --progress; drop it: progress shows unless -q/--quiet."),
])
def test_an_old_flag_is_refused_naming_its_replacement(argv: list[str], message: str, cli: Cli) -> None:
    code, stdout, err = cli(argv)
    assert code == 2 and stdout == "" and _error(err).startswith(message)


@pytest.mark.parametrize("override", ["validation.runs=3", "report.out=elsewhere"])
def test_speedup_refuses_set_b_of_what_b_takes_from_a(override: str, faked: dict[str, Path], cli: Cli) -> None:
    """B's [validation] and [report] are A's: an override of them on B is refused, not silently unused."""
    code, _, err = cli(["speedup", str(faked["config"]), "--set-b", "workload.set.threads=2", "--set-b", override])
    assert code == 2 and f"--set-b {override!r}: a speedup takes its [validation] and [report] settings from A" \
        in _error(err) and "set it in A's config file" in _error(err)


def test_speedup_files_writes_no_run_folder(faked: dict[str, Path], tmp_path: Path, cli: Cli) -> None:
    c = str(faked["config"])
    code, _, err = cli(["speedup", "--files", c, c, c, c, "-o", str(tmp_path / "x")])
    assert code == 2 and "-o/--output (it writes no run folder)" in _error(err)


def test_speedup_output_is_as_real_as_report_out(tmp_path: Path, cli: Cli) -> None:
    pytest.importorskip("torch")
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        f'name = "t"\n[lengths]\nsource = "{BUNDLED}"\nmax_samples = 48\n'
        '[batching]\npolicy = "fixed"\nparams = { batch_size = 16 }\n[selection]\nn_points = 2\n'
        '[workload]\nname = "deepspeech2:tiny"\nset = { threads = 1 }\n'
        '[profile]\nwarmup = 0\nrepeats = 1\nmetrics = ["time"]\nuse_cache = false\ncold_window = 0\n'
        f'[report]\nout = "{tmp_path / "configured"}"\nplots = false\nhtml = false\n'
    )  # one timed step a point and no window: no cold term whose noise could warn on stderr
    folder = tmp_path / "given"
    code, out, err = cli(["speedup", str(cfg), "--set-b", "workload.set.rnn_hidden=32", "-o", str(folder), "-q"])
    assert code == 0 and err == "", err
    assert (folder / "speedup.json").exists() and not (tmp_path / "configured").exists()
    assert str(folder) in out
