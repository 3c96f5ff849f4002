"""The command line's error policy: one stderr line, exit 2 for user errors, exit 1 for bugs.

Each case runs the real :func:`seqpoint.cli.main` and checks the exit status, that
stderr is exactly one line, and that no traceback leaks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from seqpoint.cli import main
from seqpoint.schedule import IterationSchedule, write_schedule


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    return code, err


def one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def schedule(tmp_path: Path) -> Path:
    sched = IterationSchedule.from_columns({"batch_size": np.full(40, 4), "seq_len": np.arange(10, 50)})
    return write_schedule(sched, tmp_path / "s.csv")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["select", "{s}", "-k", "abc", "-o", "{d}/o.json"], r"Invalid value for '-k'.*Run 'seqpoint select --help'\."),
        (["select", "{s}", "-k", "2"], r"Missing option '-o'"),
        (["select"], r"Missing argument 'schedule'"),
        (["select", "{s}", "-k", "2", "-o", "{d}/o.json", "--bogus"], r"No such option: --bogus"),
        (["bogus"], r"No such command 'bogus'\. Run 'seqpoint --help'\."),
        (["schedule", "{s}", "--policy", "fixed", "--batch-size", "x", "-o", "{d}/s2.csv"], r"Invalid value for '--batch-size'"),
    ],
)
def test_usage_errors_are_one_line_exit_2(
    argv: list[str], message: str, schedule: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.format(s=schedule, d=tmp_path) for a in argv]
    code, err = run(args, capsys)
    assert code == 2
    line = one_line(err)
    assert line.startswith("seqpoint: error: ")
    assert __import__("re").search(message, line), line


def test_no_arguments_prints_help_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run([], capsys)
    assert code == 2
    assert "Usage:" in err and "Traceback" not in err


def test_output_where_a_folder_is_a_file(schedule: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "afile").write_text("x")
    code, err = run(["select", str(schedule), "-k", "2", "-o", str(tmp_path / "afile" / "x.json")], capsys)
    assert code == 2
    line = one_line(err)
    assert "afile" in line and "choose another path" in line


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_on_a_full_device(schedule: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(["select", str(schedule), "-k", "2", "-o", "/dev/full"], capsys)
    assert code == 2
    line = one_line(err)
    assert "/dev/full" in line and "no space left" in line


def test_an_internal_error_is_one_line_and_a_traceback_file(
    schedule: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEQPOINT_CACHE", str(tmp_path / "cache" / "m.sqlite"))

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(IterationSchedule, "rank_rows", boom)  # what select calls first
    code, err = run(["select", str(schedule), "-k", "2", "-o", str(tmp_path / "o.json")], capsys)
    assert code == 1
    line = one_line(err)
    assert line.startswith("seqpoint: internal error: RuntimeError: a bug (traceback written to ")
    assert line.endswith("; please report it)")
    written = Path(line.split("traceback written to ")[1].split(";")[0])
    assert written.parent == tmp_path / "cache" / "crashes"
    assert "Traceback" in written.read_text() and "a bug" in written.read_text()


def test_keyboard_interrupt_exits_130(
    schedule: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def stop(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(IterationSchedule, "rank_rows", stop)
    code, err = run(["select", str(schedule), "-k", "2", "-o", str(tmp_path / "o.json")], capsys)
    assert code == 130
    assert "interrupted" in one_line(err)


@pytest.mark.parametrize(
    ("category", "expected"),
    [
        ("seqpoint", "seqpoint: warning: batch_size 0 was raised to 1 (AdjustedInputWarning)"),
        ("other", "seqpoint: warning from "),
    ],
)
def test_a_warning_is_one_stderr_line(
    category: str, expected: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    import warnings

    from seqpoint import workflows
    from seqpoint.exceptions import AdjustedInputWarning

    def warning_run(cfg: object, **_: object) -> dict[str, object]:
        if category == "seqpoint":
            warnings.warn("batch_size 0 was raised to 1", AdjustedInputWarning, stacklevel=1)
        else:
            warnings.warn("a library's deprecation", FutureWarning, stacklevel=1)
        return {}

    # `seqpoint run` calls its workflow through the module: a stand-in that only warns
    monkeypatch.setattr(workflows, "run", warning_run)
    config = tmp_path / "c.toml"
    config.write_text('name = "t"\n[workload]\nname = "deepspeech2:tiny"\n')
    code, err = run(["run", str(config), "--json"], capsys)
    assert code == 0
    line = one_line(err)
    assert line.startswith(expected)
    if category == "other":
        assert line.endswith("FutureWarning: a library's deprecation")
