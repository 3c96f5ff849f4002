"""``seqpoint sweep`` end to end: a real local Ray against the serial executor, the cache,
and bad input (one line on stderr, exit 2)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("torch")

#: The shared ``cli`` fixture (tests/conftest.py): ``(exit code, stdout, stderr)``.
Cli = Callable[[list[str]], tuple[int, str, str]]

ROOT = Path(__file__).resolve().parents[2]

#: Two configurations (the base and a wider RNN) of a 6-iteration run, 2 SeqPoints,
#: FLOPs and time.
SWEEP = """
name = "cli"
[lengths]
source = "bundled:librispeech-dev-clean"
max_samples = 96
[batching]
policy = "sortagrad"
params = {{ batch_size = 16 }}
[selection]
n_points = 2
[workload]
name = "deepspeech2:tiny"
set = {{ threads = 1 }}
[profile]
warmup = 0
repeats = 1
metrics = ["time", "flops"]
{cache}
[report]
plots = false
html = false
{grid}
"""
WIDER = '[[sweep]]\nname = "wider"\nset = { "workload.set.rnn_hidden" = 32 }\n'


def _write(tmp_path: Path, grid: str = WIDER, name: str = "sweep.toml", *, cache: bool = True) -> Path:
    path = tmp_path / name
    line = f'cache = "{tmp_path / "cache.sqlite"}"' if cache else "use_cache = false"
    path.write_text(SWEEP.format(cache=line, grid=grid))
    return path


@pytest.mark.parametrize(
    ("grid", "message"),
    [
        ('[axes]\n"workload.set.colour" = [1, 2]\n', r"Unknown workload setting 'colour'"),
        ("[axes]\n", r"the sweep has no configurations"),
        ('[axes]\n"workload.set.threads" = []\n', r"axis 'workload.set.threads' has no values"),
    ],
)
def test_bad_sweep_file_is_one_line_and_exit_2(
    tmp_path: Path, grid: str, message: str, cli: Cli) -> None:
    path = _write(tmp_path, grid)
    code, out, err = cli(["sweep", str(path), "--json"])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert str(path) in err
    assert re.search(message, err), err


def test_unreachable_ray_address_is_one_line_and_exit_2(
    tmp_path: Path, cli: Cli) -> None:
    ray = pytest.importorskip("ray")
    if ray.is_initialized():  # an address is only checked when this process joins a cluster
        pytest.skip("Ray is already initialised in this process")
    code, out, err = cli(["sweep", str(_write(tmp_path)), "--executor", "ray",
                           "--address", "127.0.0.1:1"])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "Cannot reach a Ray cluster at '127.0.0.1:1'" in err


def test_executor_flags_are_checked(tmp_path: Path, cli: Cli) -> None:
    path = _write(tmp_path)
    code, _, err = cli(["sweep", str(path), "--executor", "dask"])
    assert code == 2 and "Unknown executor 'dask'. Valid executors: local, ray, submitit." in err
    code, _, err = cli(["sweep", str(path), "--executor", "local", "--num-cpus", "2"])
    assert code == 2 and "add --executor ray" in err


@pytest.fixture
def local_ray(ray_session: Callable[..., contextlib.AbstractContextManager[None]]) -> Iterator[None]:
    with ray_session():
        yield


def test_ray_sweep_matches_local_and_resumes_from_the_cache(
    tmp_path: Path, local_ray: None, cli: Cli) -> None:
    path = _write(tmp_path)
    code, out, err = cli(["sweep", str(path), "--executor", "ray", "--json",
                           "-o", str(tmp_path / "ray")])
    assert code == 0, err
    on_ray = json.loads(out)
    assert on_ray["executor"] == "ray" and (on_ray["n_iterations"], on_ray["n_points"]) == (6, 2)
    assert on_ray["stats"]["measured"] == 4 and on_ray["stats"]["failed"] == 0
    base, wider = on_ray["configs"]
    assert (base["name"], wider["name"]) == ("base", "wider")
    assert wider["overrides"] == {"workload.set.rnn_hidden": 32}
    assert base["speedup"] == pytest.approx(1.0) and base["complete"] and wider["complete"]
    lo, hi = wider["speedup_interval"]
    assert lo <= wider["speedup"] <= hi
    assert wider["projected"]["flops"] > base["projected"]["flops"]

    # the serial executor, without the cache, measures the same FLOPs
    local = _write(tmp_path, name="local.toml", cache=False)
    code, out, err = cli(["sweep", str(local), "--json", "-o", str(tmp_path / "local")])
    assert code == 0, err
    serial = json.loads(out)
    assert serial["executor"] == "local" and serial["stats"]["cached"] == 0
    assert [c["projected"]["flops"] for c in serial["configs"]] == [
        c["projected"]["flops"] for c in on_ray["configs"]]

    # a second Ray run reads every pair from the cache; the table shows the matrix
    code, out, err = cli(["sweep", str(path), "--executor", "ray", "-q",
                           "-o", str(tmp_path / "again")])
    assert code == 0, err
    assert "wider" in out and "0 measured, 4 cached, 0 failed" in out
    again = json.loads((tmp_path / "again" / "sweep.json").read_text())
    assert again["stats"]["measured"] == 0 and again["stats"]["cached"] == 4
    assert [c["projected"] for c in again["configs"]] == [c["projected"] for c in on_ray["configs"]]


def test_a_user_module_workload_needs_allow_user_code(tmp_path: Path, cli: Cli) -> None:
    grid = '[[sweep]]\nname = "user"\nset = { "workload.name" = "os:system" }\n'
    code, out, err = cli(["sweep", str(_write(tmp_path, grid)), "-q"])
    assert code == 2 and "Traceback" not in err + out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--allow-user-code" in lines[0], err
