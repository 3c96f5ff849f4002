"""The sweep file (strict checks at load) and the sweep workflow on the local executor."""

from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.executors import LocalExecutor
from seqpoint.workflows import load_sweep, sweep, sweep_from_dict


@pytest.fixture
def run_toml(tiny_run: str) -> str:
    """The tiny run (6 iterations) with 2 SeqPoints, each timed once."""
    return (f'name = "tiny"\n{tiny_run}[selection]\nn_points = 2\n'
            '[profile]\nwarmup = 0\nrepeats = 1\nmetrics = ["time"]\n[report]\nplots = false\n')


def test_base_file_relative_to_the_sweep_and_inline_sections_on_top(tmp_path: Path, run_toml: str) -> None:
    (tmp_path / "run.toml").write_text(run_toml)
    (tmp_path / "sweep.toml").write_text(
        'base = "run.toml"\n[selection]\nn_points = 3\n'
        '[[sweep]]\nname = "bf16"\nset = { "workload.set.dtype" = "bf16" }\n'
        '[[sweep]]\nname = "two-threads"\nset = { workload.set.threads = 2 }\n'
    )
    spec = load_sweep(tmp_path / "sweep.toml")
    assert spec.name == "tiny-sweep"
    assert spec.base.selection.n_points == 3 and spec.base.lengths.max_samples == 96
    assert [e.name for e in spec.configurations] == ["base", "bf16", "two-threads"]
    bf16, two = spec.entries
    assert bf16.overrides == {"workload.set.dtype": "bf16"}
    assert bf16.config.workload.set == {"threads": 1, "dtype": "bf16"}
    # an unquoted dotted key is the same key as a quoted one
    assert two.overrides == {"workload.set.threads": 2}
    assert two.config.workload.set == {"threads": 2}


def test_axes_give_their_product_with_generated_names(tmp_path: Path, run_toml: str) -> None:
    data = {**tomllib.loads(run_toml), "axes": {"workload.set.threads": [1, 2],
                                        "workload.set.dtype": ["fp32", "bf16"]}}
    spec = sweep_from_dict(data)
    assert [e.name for e in spec.entries] == [
        "threads=1,dtype=fp32", "threads=1,dtype=bf16", "threads=2,dtype=fp32", "threads=2,dtype=bf16",
    ]
    assert spec.entries[3].overrides == {"workload.set.threads": 2, "workload.set.dtype": "bf16"}
    assert spec.entries[3].config.workload.set == {"threads": 2, "dtype": "bf16"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"colour": 1}, r"Unknown key 'colour' in sweep\. Valid keys: name, base, sweep, axes"),
        ({"axes": {"workload.set.colour": [1, 2]}},
         r"configuration 'colour=1'.*Unknown workload setting 'colour'"),
        ({"axes": {"wrkload.set.dtype": ["bf16"]}}, r"'wrkload' is not a section or table"),
        ({"axes": {"threads": [1]}}, r"key 'threads' must look like section\.key"),
        ({"axes": {"workload.set.threads": []}}, r"axis 'workload.set.threads' has no values"),
        ({"axes": {"workload.set.threads": 2}}, r"axis 'workload.set.threads' must be a list"),
        ({"axes": {}}, r"the sweep has no configurations"),
        ({"sweep": []}, r"the sweep has no configurations"),
        ({"axes": {"workload.set.threads": [-1]}}, r"'threads' parameter .* must be an int >= 0"),
        ({"sweep": [{"name": "a", "set": {}}, {"name": "a", "set": {}}]},
         r"configuration name 'a' is used twice"),
        ({"sweep": [{"name": "base", "set": {}}]}, r"'base' is used twice \(it names the base\)"),
        ({"sweep": [{"set": {}}]}, r"\[\[sweep\]\] entry 1 needs a 'name'"),
        ({"sweep": [{"name": "a", "sets": {}}]}, r"entry 1 has unknown key 'sets'"),
        ({"sweep": [{"name": "a", "set": "dtype=bf16"}]}, r"'set' of \[\[sweep\]\] 'a' must be a table"),
        ({"axes": {"batching.epochs": [2]}}, r"'epochs=2' changes batching\.epochs; .*shares the "
                                             r"base's schedule, SeqPoints and cache"),
        ({"axes": {"selection.n_points": [3]}}, r"changes selection\.n_points"),
        ({"axes": {"lengths.max_samples": [50]}}, r"changes lengths\.max_samples"),
        ({"axes": {"profile.cache": ["/tmp/x.sqlite"]}}, r"changes profile\.cache"),
        ({"axes": {"profile.executor": ["ray"]}}, r"changes profile\.executor; .*not its cache or executor"),
        ({"base": "missing.toml"}, r"base config .*missing\.toml does not exist"),
    ],
)
def test_bad_sweep_files_fail_at_load(tmp_path: Path, run_toml: str, extra: dict[str, Any], message: str) -> None:
    data = {**tomllib.loads(run_toml), "sweep": [{"name": "ok", "set": {}}]}
    data.update(extra)
    if "axes" in extra and "sweep" not in extra:
        del data["sweep"]
    with pytest.raises(ConfigError, match=message):
        sweep_from_dict(data, root=tmp_path)


def test_a_profile_setting_may_vary(tmp_path: Path, run_toml: str) -> None:
    spec = sweep_from_dict({**tomllib.loads(run_toml), "axes": {"profile.repeats": [2]}})
    assert spec.entries[0].config.profile.repeats == 2


def test_missing_and_invalid_sweep_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"Sweep file .*nope\.toml does not exist"):
        load_sweep(tmp_path / "nope.toml")
    (tmp_path / "bad.toml").write_text("[[sweep]\n")
    with pytest.raises(ConfigError, match=r"bad\.toml: invalid TOML"):
        load_sweep(tmp_path / "bad.toml")


def test_local_sweep_records_a_failed_configuration_and_goes_on(tmp_path: Path, run_toml: str) -> None:
    # A user workload that runs out of memory above a length: "tight" fails at every point.
    data = {
        **tomllib.loads(run_toml),
        "workload": {"name": "_oom_workload:build", "set": {"limit": "100000"}},
        "profile": {"warmup": 0, "repeats": 2, "metrics": ["time"],
                    "cache": str(tmp_path / "c.sqlite")},
        "report": {"plots": True, "html": True},
        "sweep": [{"name": "same", "set": {}},
                  {"name": "tight", "set": {"workload.set.limit": "0"}}],
    }
    spec = sweep_from_dict(data)
    res = sweep(spec, LocalExecutor(), out=tmp_path / "run")
    base, same, tight = res.configs
    assert base.projection is not None and base.complete
    assert base.speedup is not None and base.speedup.value == pytest.approx(1.0)
    # "same" measures what the base does: one shared job, identical projection
    assert same.projection == base.projection
    assert tight.projection is None and tight.speedup is None and not tight.complete
    assert tight.n_failed == 2 and {m.status for m in tight.measurements.measurements} == {"oom"}
    assert (res.stats.pairs, res.stats.measured, res.stats.cached, res.failed) == (4, 4, 0, 2)

    out = tmp_path / "run"
    for name in ("config.toml", "sweep_spec.json", "schedule.csv", "seqpoints.json",
                 "environment.json", "measurements_00-base.json", "measurements_02-tight.json",
                 "sweep.json", "sweep.csv", "sweep.png", "report.html"):
        assert (out / name).is_file(), name
    data_out = json.loads((out / "sweep.json").read_text())
    assert [c["name"] for c in data_out["configs"]] == ["base", "same", "tight"]
    assert data_out["configs"][2] == {"name": "tight", "overrides": {"workload.set.limit": "0"},
                                      "projected": {}, "interval": {}, "speedup": None,
                                      "speedup_interval": None, "complete": False, "failed": 2}
    assert (data_out["n_iterations"], data_out["n_points"], data_out["executor"]) == (6, 2, "local")
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert [r["name"] for r in rows] == ["base", "same", "tight"]
    assert float(rows[0]["speedup"]) == pytest.approx(1.0) and rows[2]["projected_s"] == ""
    assert "Sweep" in (out / "report.html").read_text()

    # a second run reads the ok points from the cache; failed points are measured again
    again = sweep(spec, LocalExecutor(), out=tmp_path / "run2")
    assert (again.stats.measured, again.stats.cached) == (2, 2)
    assert again.configs[0].measurements == res.configs[0].measurements


@pytest.mark.parametrize("name", ["sweep-ds2-precision-width.toml", "sweep-gnmt-options.toml"])
def test_example_sweeps_load(name: str) -> None:
    spec = load_sweep(Path(__file__).resolve().parents[2] / "configs" / name)
    assert len(spec.configurations) >= 4 and spec.configurations[0].name == "base"


def test_ray_settings_with_an_executor_object_are_refused() -> None:
    path = Path(__file__).resolve().parents[2] / "configs" / "sweep-ds2-precision-width.toml"
    with pytest.raises(ConfigError, match=r"address and num_cpus make a named executor .*RayExecutor\(address="):
        sweep(path, LocalExecutor(), num_cpus=2)
