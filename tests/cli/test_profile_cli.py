"""``seqpoint profile`` and ``seqpoint cache``: outputs, caching, and the error policy."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from seqpoint.cli import main
from seqpoint.measurements import read_measurements

POINTS = {
    "method": "seqpoint",
    "n_iterations": 10,
    "points": [
        {"iteration": 3, "batch_size": 2, "seq_len": 48, "tgt_len": 0, "weight": 6},
        {"iteration": 7, "batch_size": 2, "seq_len": 96, "tgt_len": 0, "weight": 4},
    ],
}


@pytest.fixture
def seqpoints(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQPOINT_CACHE", str(tmp_path / "cache.sqlite"))
    path = tmp_path / "sp.json"
    path.write_text(json.dumps(POINTS))
    return path


def _run(args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_profile_writes_measurements_and_uses_the_cache(seqpoints, tmp_path, capsys) -> None:
    out = tmp_path / "m.json"
    args = [
        "profile",
        str(seqpoints),
        "--workload",
        "deepspeech2:tiny",
        "--set",
        "workload.set.threads=1",
        "--metric",
        "time",
        "--metric",
        "flops",
        "--repeats",
        "2",
        "--warmup",
        "0",
        "-q",
        "-o",
        str(out),
    ]
    assert _run(args) == 0
    ms = read_measurements(out)
    assert ms.workload == "deepspeech2:tiny" and ms.complete
    assert [m.iteration for m in ms.measurements] == [3, 7]
    assert all(m.metrics["time_s"] > 0 and m.metrics["flops"] > 0 for m in ms.measurements)
    assert len(ms.measurements[0].samples["time_s"]) == 2
    text = capsys.readouterr().out
    assert "deepspeech2:tiny: 2 points" in text and "wrote" in text
    first = out.read_text()
    assert _run(args) == 0  # second run: all from the cache, identical numbers
    assert json.loads(out.read_text())["measurements"] == json.loads(first)["measurements"]
    assert _run(["cache", "list"]) == 0
    assert "2 measurements" in capsys.readouterr().out
    assert _run(["cache", "export", "-o", str(tmp_path / "e.json")]) == 0
    assert len(json.loads((tmp_path / "e.json").read_text())["entries"]) == 2
    assert _run(["cache", "clear", "--workload", "deepspeech2:tiny"]) == 0
    assert "deleted 2 measurements" in capsys.readouterr().out


def test_no_cache_writes_no_cache(seqpoints, tmp_path) -> None:
    args = [
        "profile",
        str(seqpoints),
        "-w",
        "bert:tiny",
        "--metric",
        "flops",
        "--no-cache",
        "-q",
        "-o",
        str(tmp_path / "m.json"),
    ]
    assert _run(args) == 0
    assert not (tmp_path / "cache.sqlite").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--workload", "nope"], "Unknown workload 'nope'. Valid names: bert, deepspeech2, gnmt."),
        (["--workload", "bert:huge"], "Unknown preset 'huge' of workload 'bert'"),
        (["--workload", "bert:tiny", "--set", "workload.set.colour=red"], "Unknown workload setting 'colour'"),
        (
            ["--workload", "bert:tiny", "--set", "workload.set.threads=many"],
            "'threads' parameter of BertConfig must be an int",
        ),
        (["--workload", "bert:tiny", "--set", "threads"], "--set expects section.key=value"),
        (["--workload", "bert:tiny", "--metric", "speed"], "Unknown metric 'speed'"),
        (["--workload", "bert:tiny", "--timer", "sundial"], "Unknown timer 'sundial'"),
        (
            ["--workload", "bert:tiny", "--repeats", "0"],
            # the message of [profile] repeats = 0 in a run config
            "[profile]: The 'repeats' parameter of ProfileSection must be an int >= 1. Got 0.",
        ),
        (
            ["--workload", "bert:tiny", "--cache", "c.sqlite", "--no-cache"],
            "--cache and --no-cache exclude each other",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(seqpoints, tmp_path, capsys, extra, message) -> None:
    code = _run(
        ["profile", str(seqpoints), *extra, "-q", "-o", str(tmp_path / "m.json")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("seqpoint: error: ") and message in err[0]
    assert "Traceback" not in err[0]


def test_the_instructions_timer_without_valgrind_names_the_package_exit_2(
    seqpoints, tmp_path, capsys, monkeypatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no valgrind on it
    code = _run(["profile", str(seqpoints), "--workload", "bert:tiny", "--timer", "instructions",
                 "--repeats", "1", "--no-cache", "-q", "-o", str(tmp_path / "m.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and "apt-get install valgrind" in err[0]
    assert not (tmp_path / "m.json").exists()


def test_missing_seqpoints_file(tmp_path, capsys) -> None:
    code = _run(
        ["profile", str(tmp_path / "none.json"), "-w", "bert:tiny", "-o", str(tmp_path / "m.json")]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "does not exist" in err[0]


def test_failed_points_are_recorded_exit_0(seqpoints, tmp_path, capsys) -> None:
    # a bert row longer than max_position fails at make_batch... that is bad input (exit 2);
    # a model that raises at step time is recorded instead: use a 1-token GNMT vocabulary edge
    data = dict(POINTS)
    data["points"] = [
        {"iteration": 0, "batch_size": 2, "seq_len": 8, "tgt_len": 0, "weight": 5},
        {
            "iteration": 1,
            "batch_size": 2,
            "seq_len": 8,
            "tgt_len": 0,
            "sum_sq_len": 40,
            "weight": 5,
        },
    ]
    sp = tmp_path / "sp2.json"
    sp.write_text(json.dumps(data))
    out = tmp_path / "m.json"
    code = _run(
        [
            "profile",
            str(sp),
            "-w",
            "tests_cli_failing_workload:make",
            "--allow-user-code",
            "--no-cache",
            "-q",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "-o",
            str(out),
        ]
    )
    assert code == 0
    ms = read_measurements(out)
    assert [m.status for m in ms.measurements] == ["ok", "oom"]
    captured = capsys.readouterr()
    assert "1 of 2 points did not measure (oom)" in captured.err
    assert "oom" in captured.out


def _flops(seqpoints, out, *extra: str) -> list[str]:
    return ["profile", str(seqpoints), "-w", "bert:tiny", "--metric", "flops", "--no-cache", "-o", str(out),
            *extra]


def test_json_is_a_summary_and_nothing_else(seqpoints, tmp_path, cli) -> None:
    out = tmp_path / "m.json"
    code, stdout, err = cli(_flops(seqpoints, out, "--json"))
    assert code == 0 and err == ""
    metrics = sorted({k for m in read_measurements(out).measurements for k in m.metrics})
    assert "flops" in metrics
    assert json.loads(stdout) == {"output": str(out), "workload": "bert:tiny", "n_points": 2, "ok": 2,
                                  "failed": 0, "metrics": metrics}
    code, stdout, err = cli(_flops(seqpoints, out, "-q"))
    assert code == 0 and err == "" and "bert:tiny: 2 points" in stdout


def test_set_takes_the_profile_keys_of_its_flags(seqpoints, tmp_path, cli) -> None:
    code, _, err = cli(_flops(seqpoints, tmp_path / "m.json", "--set", 'profile.metrics=["bytes"]',
                              "--set", "profile.use_cache=true", "--set", f"profile.cache={tmp_path / 'c2.sqlite'}"))
    assert code == 0, err
    metrics = read_measurements(tmp_path / "m.json").measurements[0].metrics
    assert "bytes" in metrics and "flops" not in metrics
    assert (tmp_path / "c2.sqlite").exists()
    # every [profile] key, as a run config's (processes, cold_window, executor ...); no other section's
    code, _, err = cli(_flops(seqpoints, tmp_path / "m.json", "--set", "selection.n_points=3"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert ("--set 'selection.n_points=3': seqpoint profile takes the keys of [workload], [profile] but "
            "workload.name, which its arguments give") in err
    code, _, err = cli(_flops(seqpoints, tmp_path / "m.json", "--set", "profile.processes=9"))
    assert code == 2 and "The 'processes' parameter (9) spreads the 'repeats' (5) over processes" in err


@pytest.mark.parametrize(
    ("item", "toml"),
    [
        ("workload.set.colour=red", '[workload]\nname = "bert:tiny"\nset = {colour = "red"}\n'),
        ("workload.set.threads=many", '[workload]\nname = "bert:tiny"\nset = {threads = "many"}\n'),
        ("profile.repeats=0", '[profile]\nrepeats = 0\n'),
        ("profile.timer=sundial", '[profile]\ntimer = "sundial"\n'),
    ],
)
def test_a_bad_set_value_gets_the_tomls_message(seqpoints, tmp_path, cli, item, toml) -> None:
    from seqpoint.exceptions import ConfigError
    from seqpoint.workflows import load_config

    code, _, err = cli(_flops(seqpoints, tmp_path / "m.json", "--set", item, "-q"))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    config = tmp_path / "c.toml"
    config.write_text('[lengths]\nsource = "l.csv"\n' + toml)
    with pytest.raises(ConfigError) as exc:
        load_config(config)
    assert lines[0] == f"seqpoint: error: --set overrides: {str(exc.value).removeprefix(f'{config}: ')}"


@pytest.fixture(autouse=True)
def _failing_module(tmp_path, monkeypatch):
    (tmp_path / "tests_cli_failing_workload.py").write_text(
        "import torch\n"
        "from seqpoint.workloads import load_workload\n"
        "class Failing:\n"
        "    def __init__(self):\n"
        "        self.inner = load_workload('bert:tiny')\n"
        "        self.name, self.config = 'failing', self.inner.config\n"
        "    def make_batch(self, sig):\n"
        "        self.packed = len(sig) == 4\n"
        "        return self.inner.make_batch(sig)\n"
        "    def step(self, batch):\n"
        "        if self.packed:\n"
        "            raise torch.OutOfMemoryError('CUDA out of memory. Tried to allocate 8 GiB')\n"
        "        return self.inner.step(batch)\n"
        "def make(**overrides):\n"
        "    return Failing()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_timer_that_cannot_time_the_workloads_device_exits_2(seqpoints, tmp_path, capsys) -> None:
    """--timer cuda on a CPU workload: one line naming both and the timer to use, nothing measured."""
    code = _run(["profile", str(seqpoints), "-w", "deepspeech2:tiny", "--timer", "cuda", "-q",
                 "-o", str(tmp_path / "m.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0]
    assert "The 'cuda' timer times GPU work, and deepspeech2:tiny runs on cpu; use timer = \"wall\"" in err[0]
    assert not (tmp_path / "m.json").exists()
