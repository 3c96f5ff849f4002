"""The small run config the workflow tests share."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seqpoint.workflows import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    ReportSection,
    RunConfig,
    SelectionSection,
    WorkloadSection,
)


def _tiny_config(root: Path, **sections: Any) -> RunConfig:
    """deepspeech2:tiny on 96 LibriSpeech utterances (12 iterations over two epochs), 3 points,
    cache and run folder under ``root``; any section (or ``name``) replaced by keyword."""
    base: dict[str, Any] = dict(
        name="t",
        lengths=LengthsSection(source="bundled:librispeech-dev-clean", max_samples=96),
        batching=BatchingSection(policy="sortagrad", epochs=2, params={"batch_size": 16}),
        selection=SelectionSection(n_points=3),
        workload=WorkloadSection(name="deepspeech2:tiny", set={"threads": 1}),
        profile=ProfileSection(warmup=1, repeats=2, metrics=("time", "flops"),
                               cache=str(root / "cache.sqlite")),
        report=ReportSection(out=str(root / "run"), plots=False, html=True),
    )
    return RunConfig(**{**base, **sections})


@pytest.fixture(scope="session")
def tiny_config() -> Callable[..., RunConfig]:
    """``tiny_config(root, **sections)``: a small run config writing under ``root``."""
    return _tiny_config
