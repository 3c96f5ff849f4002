"""``seqpoint run --set profile.executor=ray`` on a real local Ray (no mocks): the same FLOPs
per SeqPoint and the same projected FLOPs as the local executor, through the one planner."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from seqpoint.cache import MeasurementCache

pytest.importorskip("ray")
pytest.importorskip("torch")

Cli = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture
def config(tmp_path: Path, tiny_run: str) -> Path:
    """The tiny job with 3 SeqPoints and counted FLOPs only (deterministic, no training
    step runs, so the comparison is exact and fast), its cache in ``tmp_path``."""
    path = tmp_path / "run.toml"
    path.write_text(
        f'name = "ray-run"\n{tiny_run}[selection]\nn_points = 3\n'
        f'[profile]\nmetrics = ["flops"]\ncache = "{tmp_path / "ray.sqlite"}"\n'
        "[report]\nplots = false\nhtml = false\n"
    )
    return path


@pytest.fixture(scope="module")
def local_ray(ray_session: Callable[..., contextlib.AbstractContextManager[None]]) -> Iterator[None]:
    with ray_session():
        yield


def _run(cli: Cli, config: Path, out: Path, *extra: str) -> tuple[dict[str, object], list[dict[str, object]]]:
    code, stdout, err = cli(["run", str(config), "--json", "-o", str(out), *extra])
    assert code == 0, err
    saved = json.loads((out / "measurements.json").read_text())["measurements"]
    return json.loads(stdout), saved


def test_run_on_ray_measures_the_flops_of_the_local_executor(
    tmp_path: Path, local_ray: None, cli: Cli, config: Path
) -> None:
    on_ray, ray_points = _run(cli, config, tmp_path / "ray", "--set", "profile.executor=ray")
    local, local_points = _run(cli, config, tmp_path / "local", "--set", f"profile.cache={tmp_path / 'local.sqlite'}")

    def flops(points: list[dict[str, object]]) -> list[tuple[object, object]]:
        return [(p["iteration"], p["metrics"]["flops"]) for p in points]  # type: ignore[index]

    assert len(ray_points) == 3 and all(p["status"] == "ok" for p in ray_points)
    assert flops(ray_points) == flops(local_points)
    assert on_ray["projection"]["projected"]["flops"] == local["projection"]["projected"]["flops"]  # type: ignore[index]

    # The Ray driver wrote the cache rows the local executor reads: nothing is measured again.
    rows = len(MeasurementCache(tmp_path / "ray.sqlite"))
    assert rows == len({p["seq_len"] for p in ray_points})
    _, again = _run(cli, config, tmp_path / "again")
    assert flops(again) == flops(ray_points) and len(MeasurementCache(tmp_path / "ray.sqlite")) == rows


def test_an_unknown_executor_is_one_line(cli: Cli, config: Path) -> None:
    code, out, err = cli(["run", str(config), "--set", "profile.executor=dask"])
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "The 'executor' parameter of [profile] must be one of 'local', 'ray', 'submitit'. Got 'dask'." in err
