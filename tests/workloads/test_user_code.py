"""Issue 13: user code runs only when asked for; never from the working folder implicitly."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.workflows import RunFolder
from seqpoint.workloads import check_user_code, is_user_code, load_workload

MODULE = """
from seqpoint.workloads import load_workload

def make(**overrides):
    wl = load_workload("bert:tiny", overrides)
    wl.name = "cwd_wl:make"
    return wl
"""


def test_module_function_needs_the_flag() -> None:
    assert is_user_code("os:system") and not is_user_code("bert:tiny")
    with pytest.raises(ConfigError, match="user code.*--allow-user-code"):
        check_user_code("os:system", allowed=False)
    check_user_code("os:system", allowed=True)
    check_user_code("models/wl.py:make", allowed=False)  # a named file is explicit
    check_user_code("bert:tiny", allowed=False)


def test_working_folder_is_not_imported_implicitly(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "cwd_wl.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="cannot import module 'cwd_wl'"):
        load_workload("cwd_wl:make")
    # Naming the file loads it explicitly.
    wl = load_workload("cwd_wl.py:make", {"threads": 1})
    assert wl.name == "cwd_wl:make"
    assert getattr(wl, "source_files", None) == (str(tmp_path / "cwd_wl.py"),)


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
