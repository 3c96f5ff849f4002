"""The small run configs the workflow tests share."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from seqpoint.workflows import RunConfig, apply_overrides

#: deepspeech2:tiny on 96 LibriSpeech utterances (12 iterations over two epochs), 3 points; no
#: in-sequence window (a fresh process each run: the tests of the window ask for it).
_TINY: dict[str, Any] = {
    "name": "t",
    "lengths": {"source": "bundled:librispeech-dev-clean", "max_samples": 96},
    "batching": {"policy": "sortagrad", "epochs": 2, "params": {"batch_size": 16}},
    "selection": {"n_points": 3},
    "workload": {"name": "deepspeech2:tiny", "set": {"threads": 1}},
    "profile": {"warmup": 1, "repeats": 2, "metrics": ["time", "flops"], "cold_window": 0},
    "report": {"plots": False, "html": True},
}
#: bert:tiny on 160 WikiText-2 lines in batches of 8, 3 points, timed only, uncached, no report files.
_BERT: dict[str, Any] = {
    **_TINY,
    "lengths": {"source": "bundled:wikitext-2-valid", "max_samples": 160},
    "batching": {"policy": "fixed", "params": {"batch_size": 8}},
    "workload": {"name": "bert:tiny", "set": {"threads": 1}},
    "profile": {"warmup": 1, "repeats": 2, "metrics": ["time"], "use_cache": False, "cold_window": 0},
    "report": {"plots": False, "html": False},
}


def _config(base: dict[str, Any], root: Path, *overrides: str, **sections: Any) -> RunConfig:
    cfg = RunConfig.from_dict({**base, "profile": {**base["profile"], "cache": str(root / "cache.sqlite")},
                               "report": {**base["report"], "out": str(root / "run")}})
    if overrides:
        cfg = apply_overrides(cfg, list(overrides))
    return dataclasses.replace(cfg, **sections)


@pytest.fixture(scope="session")
def tiny_config() -> Callable[..., RunConfig]:
    """``tiny_config(root, *overrides, **sections)``: the deepspeech2:tiny config, cache and
    run folder under ``root``; ``section.key=value`` overrides, then any section (or
    ``name``) replaced by keyword."""
    return functools.partial(_config, _TINY)


@pytest.fixture(scope="session")
def bert_config() -> Callable[..., RunConfig]:
    """``bert_config(root, *overrides, **sections)``: the same for the bert:tiny config."""
    return functools.partial(_config, _BERT)


class FakeMlflow:
    """What ``run(cfg, log_mlflow=True)`` logs, recorded in place of mlflow (an optional extra)."""

    def __init__(self) -> None:
        self.runs: list[tuple[str | None, bool]] = []
        self.tags: dict[str, str] = {}
        self.params: dict[str, str] = {}
        self.metrics: dict[str, float] = {}
        self.artifacts: list[str] = []

    def active_run(self) -> None:
        return None

    def start_run(self, run_name: str | None = None, nested: bool = False) -> contextlib.nullcontext[Any]:
        self.runs.append((run_name, nested))
        return contextlib.nullcontext(SimpleNamespace(info=SimpleNamespace(run_id=str(len(self.runs)))))

    def set_tags(self, tags: dict[str, str]) -> None:
        self.tags.update(tags)

    def log_params(self, params: dict[str, str]) -> None:
        self.params.update(params)

    def log_metrics(self, metrics: dict[str, float]) -> None:
        self.metrics.update(metrics)

    def log_artifacts(self, path: str) -> None:
        self.artifacts.append(path)


@pytest.fixture
def fake_mlflow(monkeypatch: pytest.MonkeyPatch) -> FakeMlflow:
    """A :class:`FakeMlflow` as the ``mlflow`` module for the test."""
    fake = FakeMlflow()
    monkeypatch.setitem(sys.modules, "mlflow", fake)
    return fake
