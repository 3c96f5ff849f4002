"""``seqpoint demo``: deepspeech2:tiny with SortaGrad on bundled LibriSpeech lengths, on the
CPU: the 10-epoch run projected from 10 SeqPoints, then checked against two measured full
runs of a 3,000-utterance subset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._sections import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    ReportSection,
    SelectionSection,
    ValidationSection,
    WorkloadSection,
)

__all__ = ["demo_configs"]


def demo_configs(out: str | Path) -> tuple[RunConfig, RunConfig]:
    """The demo's whole-run config and its validation config, writing under ``out``."""
    out = Path(out)
    # 3 worker processes in [profile]: only they measure the process-to-process spread the
    # interval carries (benchmarks/RESULTS.md, bench_cold_default).
    common: dict[str, Any] = {
        "selection": SelectionSection(method="seqpoint", n_points=10),
        "workload": WorkloadSection(name="deepspeech2:tiny", set={"threads": 1}),
        "profile": ProfileSection(warmup=2, repeats=5, metrics=("time", "flops", "breakdown", "memory"), processes=3),
    }
    whole = RunConfig(
        name="demo",
        lengths=LengthsSection(source="bundled:librispeech-train-clean-100"),
        batching=BatchingSection(policy="sortagrad", epochs=10, params={"batch_size": 32}),
        report=ReportSection(out=str(out / "run")),
        **common,
    )
    subset = RunConfig(
        name="demo-validate",
        lengths=LengthsSection(source="bundled:librispeech-train-clean-100", max_samples=3000),
        batching=BatchingSection(policy="sortagrad", epochs=2, params={"batch_size": 16}),
        validation=ValidationSection(runs=2, baselines=("first", "random", "mean", "median", "simpoint",
                                                        "stratified")),
        report=ReportSection(out=str(out / "validate")),
        **common,
    )
    return whole, subset
