"""The stages of a run, each from its config section: lengths, schedule, points, measurements."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from seqpoint.exceptions import ConfigError
from seqpoint.pipeline._config import (
    BatchingSection,
    LengthsSection,
    ProfileSection,
    RunConfig,
    SelectionSection,
    WorkloadSection,
)
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import BaseSelector, SeqPoints
from seqpoint.traces import Lengths

__all__ = [
    "build_schedule",
    "choose_points",
    "load_lengths",
    "make_profile_config",
    "make_workload",
    "measure",
    "open_cache",
    "validation_schedule",
]


def load_lengths(sec: LengthsSection) -> Lengths:
    """Read the lengths named by ``[lengths]``, optionally a seeded random subset."""
    from seqpoint.traces import read_lengths

    lengths = read_lengths(sec.source, format=sec.format, column=sec.column, tgt=sec.tgt, **sec.params)
    if sec.max_samples is not None and sec.max_samples < len(lengths):
        rng = np.random.default_rng(sec.subset_seed)
        idx = np.sort(rng.choice(len(lengths), size=sec.max_samples, replace=False))
        lengths = lengths.take(idx)
    return lengths


def build_schedule(sec: BatchingSection, lengths: Lengths) -> IterationSchedule:
    """Replay ``[batching]`` over ``lengths``."""
    from seqpoint.batching import replay

    return replay(lengths, sec.policy, epochs=sec.epochs, seed=sec.seed, **sec.params)


def validation_schedule(cfg: RunConfig, schedule: IterationSchedule) -> IterationSchedule:
    """The part of ``schedule`` that ``[validation]`` executes in full."""
    sub = schedule
    if cfg.validation.epochs is not None:
        sub = sub.epochs(cfg.validation.epochs)
    if cfg.validation.max_iterations is not None:
        sub = sub.head(cfg.validation.max_iterations)
    # Re-number so the subset is a schedule of its own (SeqPoints index into it).
    cols = sub.columns()
    cols["iteration"] = np.arange(len(sub), dtype=np.int64)
    return IterationSchedule(**cols, meta={**sub.meta, "validation_subset": True})


def choose_points(
    sec: SelectionSection, schedule: IterationSchedule, *, method: str | None = None,
    n_points: int | None = None,
) -> tuple[BaseSelector, SeqPoints]:
    """Fit the selector of ``[selection]`` (or ``method`` at ``n_points``) on ``schedule``."""
    from seqpoint.selection import make_selector

    name = method or sec.method
    params: dict[str, Any] = {"random_state": sec.seed}
    if name == sec.method:
        params.update(sec.params)
    if n_points is not None:
        params["n_points"] = n_points
    elif sec.max_error is not None:
        if name != "seqpoint":
            raise ConfigError(
                f"max_error selects k for the 'seqpoint' method only; give n_points for {name!r}."
            )
        params["max_error"] = sec.max_error
    else:
        params["n_points"] = sec.n_points
    selector = make_selector(name, **params).fit(schedule)
    return selector, selector.to_seqpoints(schedule)


def make_workload(sec: WorkloadSection) -> Any:
    """Build the workload of ``[workload]`` (imports torch)."""
    from seqpoint.workloads import load_workload

    return load_workload(sec.name, overrides=dict(sec.set))


def make_profile_config(sec: ProfileSection) -> Any:
    """The harness config of ``[profile]``."""
    from seqpoint.profiling import ProfileConfig

    return ProfileConfig(warmup=sec.warmup, repeats=sec.repeats, timer=sec.timer, metrics=sec.metrics)


def open_cache(sec: ProfileSection) -> Any:
    """The measurement cache of ``[profile]``, or None when disabled."""
    if not sec.use_cache:
        return None
    from seqpoint.cache import MeasurementCache

    return MeasurementCache(sec.cache)


def measure(
    cfg: RunConfig, workload: Any, points: SeqPoints | Iterable[Any], *, cache: Any = None,
    progress: bool = True, console: Any = None,
) -> Any:
    """Profile ``points`` with ``[profile]``; cached points are not measured again."""
    from seqpoint.profiling import profile_points

    return profile_points(
        workload, points, make_profile_config(cfg.profile), cache=cache, progress=progress,
        console=console,
    )
