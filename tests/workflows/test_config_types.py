"""Every key of every config section given a value of the wrong TOML type is one clear
error (issue 33: ``[profile] timer = {}`` ended in an internal TypeError), and a config
that names nothing to run is refused instead of running the default job."""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path

import pytest

from seqpoint.exceptions import SeqPointError
from seqpoint.workflows import RunConfig

#: One value of each TOML type.
VALUES = {"table": {"a": 1}, "array": [1, 2], "string": "x", "bool": True, "float": 1.5, "int": 3,
          "datetime": datetime.datetime(2020, 1, 1)}
BASE = {"name": "t", "lengths": {"source": "bundled:wikitext-2-valid"}}


def _keys() -> list[tuple[str, str]]:
    cfg = RunConfig.from_dict(BASE)
    return [(f.name, g.name) for f in dataclasses.fields(cfg) if dataclasses.is_dataclass(getattr(cfg, f.name))
            for g in dataclasses.fields(getattr(cfg, f.name))]


@pytest.mark.parametrize("kind", list(VALUES))
def test_a_value_of_any_toml_type_is_accepted_or_one_clear_error(kind: str) -> None:
    for section, key in _keys():
        data = {**BASE, section: {**BASE.get(section, {}), key: VALUES[kind]}}
        try:
            RunConfig.from_dict(data)
        except SeqPointError as exc:
            assert len(str(exc).splitlines()) == 1 and (key in str(exc) or section in str(exc)), (section, key, exc)
        except Exception as exc:  # anything else reaches the user as an internal error
            pytest.fail(f"[{section}] {key} = {VALUES[kind]!r} raised {type(exc).__name__}: {exc}")


def test_a_table_where_a_name_goes_is_one_line_through_the_cli(tmp_path: Path, cli) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('[lengths]\nsource = "bundled:wikitext-2-valid"\n[profile]\ntimer = {}\n')
    code, _, err = cli(["run", str(cfg)])
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "timer is named by a string; got dict {}. Valid names: cpu, cuda, instructions, wall" in err


def test_an_empty_config_or_one_without_lengths_is_refused(tmp_path: Path, cli) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    code, _, err = cli(["run", str(empty)])
    assert code == 2 and "empty.toml is empty: a run config names at least its lengths" in err
    nothing = tmp_path / "n.toml"
    nothing.write_text('name = "n"\n[workload]\nname = "bert:tiny"\n')
    code, _, err = cli(["run", str(nothing), "-o", str(tmp_path / "out")])
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "The config names no lengths: set [lengths] source" in err
