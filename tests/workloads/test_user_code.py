"""Issue 13: user code runs only when asked for; never from the working folder implicitly."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.workflows import RunFolder
from seqpoint.workloads import WorkloadRecipe, check_user_code, load_workload

MODULE = """
from seqpoint.workloads import load_workload

def make(**overrides):
    wl = load_workload("bert:tiny", overrides)
    wl.name = "cwd_wl:make"
    return wl
"""


def test_module_function_needs_the_flag() -> None:
    with pytest.raises(ConfigError, match="user code.*--allow-user-code"):
        check_user_code("os:system", allowed=False)
    check_user_code("os:system", allowed=True)
    check_user_code("models/wl.py:make", allowed=False)  # a named file is explicit
    check_user_code("bert:tiny", allowed=False)


def test_working_folder_is_not_imported_implicitly(tmp_path: Path, monkeypatch) -> None:
    import sys

    (tmp_path / "cwd_wl.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # loading the file puts its folder on it
    with pytest.raises(ConfigError, match="cannot import module 'cwd_wl'"):
        load_workload("cwd_wl:make")
    # Naming the file loads it explicitly.
    wl = load_workload("cwd_wl.py:make", {"threads": 1})
    assert wl.name == "cwd_wl:make"
    assert not hasattr(wl, "source_files")  # nothing is written onto the user's object
    # the file is part of the workload's code through its recipe (the cache key hashes it)
    assert WorkloadRecipe.of("cwd_wl.py:make").source_files == (str(tmp_path / "cwd_wl.py"),)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("json:loads", "cannot be called as loads"),
        (":tiny", "give NAME"),
        ("missing_file_x.py:make", "cannot import module"),
    ],
)
def test_bad_user_specs_are_one_error(spec: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        load_workload(spec)


def test_threads_are_bounded() -> None:
    with pytest.raises(ConfigError, match="'threads' parameter of BertConfig must be an int >= 0 and <= 1,024"):
        load_workload("bert:tiny", {"threads": 1_000_000})


@pytest.mark.parametrize("name", ["../../escaped", "a/b", ".hidden", "a\x00b", "", "x" * 300])
def test_run_names_are_one_safe_component(name: str) -> None:
    with pytest.raises(ConfigError, match="must be one plain folder name"):
        RunFolder.new(name)
    assert RunFolder.new("ok-name").path.parent == Path("runs")


SIBLING = """
from common import WIDTH  # a module beside this file, as `python case_b.py` would find it

def build(**overrides):
    from seqpoint.workloads import load_workload

    wl = load_workload("bert:tiny", overrides)
    wl.name = f"case_b:{WIDTH}"
    return wl
"""


def test_a_file_imports_the_modules_beside_it(tmp_path: Path, monkeypatch) -> None:
    import sys

    folder = tmp_path / "jobs"
    folder.mkdir()
    (folder / "common.py").write_text("WIDTH = 7\n")
    (folder / "case_b.py").write_text(textwrap.dedent(SIBLING))
    monkeypatch.setattr(sys, "path", list(sys.path))  # the file's folder stays on it, as with python FILE
    monkeypatch.delitem(sys.modules, "common", raising=False)
    wl = load_workload(f"{folder / 'case_b.py'}:build", {"threads": 1})
    assert wl.name == "case_b:7" and sys.path[0] == str(folder)


def test_a_missing_import_inside_a_file_says_what_to_do(tmp_path: Path, monkeypatch) -> None:
    import sys

    (tmp_path / "case_c.py").write_text("import not_beside_it_xyz\n\ndef build(**o):\n    pass\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(ConfigError) as err:
        load_workload(f"{tmp_path / 'case_c.py'}:build")
    text = str(err.value)
    assert len(text.splitlines()) == 1
    assert f"Workload file {tmp_path / 'case_c.py'} imports module 'not_beside_it_xyz'" in text
    assert f"the file's folder {tmp_path} is on the import path" in text
    assert "install the package, or add the folder that holds it to PYTHONPATH" in text
