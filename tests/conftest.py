"""Helpers several test packages share: the CLI run in-process, a local Ray session, and
tests marked ``gpu`` skipped when torch sees no CUDA device."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from seqpoint import Reporter
from seqpoint.cli import main
from seqpoint.exceptions import InputError

SRC = Path(__file__).resolve().parents[1] / "src"

CliResult = tuple[int, str, str]


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is not None:
        import torch

        if not torch.cuda.is_available():
            pytest.skip("needs a CUDA device")


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[[list[str]], CliResult]:
    """Run ``seqpoint ARGV`` in this process: ``(exit code, stdout, stderr)``."""

    def run(argv: list[str]) -> CliResult:
        capsys.readouterr()
        try:
            code = main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@contextlib.contextmanager
def _ray_session(*paths: Path) -> Iterator[None]:
    # Ray workers are fresh processes: they find this checkout's sources (and any test
    # workload module) through PYTHONPATH, which a local Ray's workers inherit.
    ray = pytest.importorskip("ray")
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (*map(str, paths), str(SRC), old) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture(scope="session")
def ray_session() -> Callable[..., contextlib.AbstractContextManager[None]]:
    """``with ray_session(*extra_paths):`` a local Ray of 2 CPUs, shut down afterwards."""
    return _ray_session


@pytest.fixture(scope="session")
def tiny_run() -> str:
    """The tables of a tiny job: deepspeech2:tiny on 96 LibriSpeech utterances, batch 16,
    one epoch (6 iterations). A test puts its ``name = ...`` before them (top-level keys
    precede tables) and its [selection], [profile] and [report] after."""
    return """
[lengths]
source = "bundled:librispeech-dev-clean"
max_samples = 96
[batching]
policy = "sortagrad"
params = { batch_size = 16 }
[workload]
name = "deepspeech2:tiny"
set = { threads = 1 }
"""


@pytest.fixture
def read_error(tmp_path: Path) -> Callable[[Callable[[Path], object], object, str], str]:
    """``read_error(read, content, match)``: ``content`` (bytes, or data written as JSON) in a
    file that ``read(path)`` refuses with one InputError line naming the file; the line."""

    def check(read: Callable[[Path], object], content: object, match: str) -> str:
        path = tmp_path / "input.json"
        path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
        with pytest.raises(InputError, match=match) as info:
            read(path)
        text = str(info.value)
        assert text.startswith(f"{path}: ") and "\n" not in text
        return text

    return check


@dataclasses.dataclass(frozen=True, kw_only=True)
class RecordingReporter(Reporter):
    """A silent reporter that keeps what a campaign reports: each worker's line and each bar's
    title (its labelled and hooked copies share the list)."""

    progress: bool = False
    seen: list[str] = dataclasses.field(default_factory=list)

    def note(self, line: str) -> None:
        self.seen.append(line)

    @contextlib.contextmanager
    def bar(self, title: str, total: int, *, transient: bool = False) -> Iterator[Any]:
        self.seen.append(title)
        yield lambda n, description: None


@pytest.fixture
def recorder() -> RecordingReporter:
    """What a campaign reported, in order (:class:`RecordingReporter`)."""
    return RecordingReporter()
