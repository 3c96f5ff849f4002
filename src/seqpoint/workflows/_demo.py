"""``seqpoint demo``: deepspeech2:tiny with SortaGrad on bundled LibriSpeech lengths, on the
CPU: the 10-epoch run projected from 10 SeqPoints, then checked against two measured full
runs of a 3,000-utterance subset."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from seqpoint.reports._summaries import print_run, print_validation
from seqpoint.reports._terminal import print_histogram, print_seqpoints
from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._run import run
from seqpoint.workflows._sections import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    ReportSection,
    SelectionSection,
    ValidationSection,
    WorkloadSection,
)
from seqpoint.workflows._validate import validate

__all__ = ["demo_configs", "run_demo"]


def demo_configs(out: str | Path) -> tuple[RunConfig, RunConfig]:
    """The demo's whole-run config and its validation config, writing under ``out``."""
    out = Path(out)
    common: dict[str, Any] = {
        "selection": SelectionSection(method="seqpoint", n_points=10),
        "workload": WorkloadSection(name="deepspeech2:tiny", set={"threads": 1}),
    }
    # 3 worker processes: only they measure the process-to-process spread the interval
    # carries (benchmarks/RESULTS.md, bench_cold_default).
    common["profile"] = ProfileSection(warmup=2, repeats=5, metrics=("time", "flops", "breakdown", "memory"),
                                       processes=3)
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


def run_demo(console: Console, *, out: str | Path | None = None, progress: bool = True) -> int:
    """Run the demo, print every stage, and return the exit status."""
    root = Path(out) if out else RunFolder.new("demo").path
    whole, subset = demo_configs(root)
    console.rule("[bold]seqpoint demo")
    console.print(
        "DeepSpeech2-style model ([bold]deepspeech2:tiny[/], CPU, 1 thread) on LibriSpeech "
        "train-clean-100 (28,539 utterances, 10 ms frames), SortaGrad then shuffled epochs, "
        "batch 32, 10 epochs. The SeqPoints are timed in 3 fresh worker processes, in turn, "
        "with a drift check.\n"
    )
    result = run(whole, progress=progress, console=console)
    print_histogram(console, result.schedule, result.seqpoints, unit=result.unit)
    print_seqpoints(console, result.seqpoints, result.measurements)
    print_run(console, result)

    console.rule("[bold]Is it right? A measured full run of a small subset")
    console.print(
        "3,000 random utterances, batch 16, 2 epochs (SortaGrad + shuffled): every iteration "
        "is trained, twice, and compared with the projection from 10 SeqPoints and with "
        "today's practice (first-N, random-N, mean/median length, SimPoint-style, stratified).\n"
    )
    check = validate(subset, progress=progress, console=console)
    print_validation(console, check)
    console.print(f"\nReports: [bold]{result.folder.path / 'report.html'}[/] and "
                  f"[bold]{check.folder.path / 'report.html'}[/]")
    return 0
