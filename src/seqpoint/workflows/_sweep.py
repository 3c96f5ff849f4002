"""``seqpoint sweep``: many configurations measured on one run's SeqPoints, through an executor.

The SeqPoints are chosen once, from the base. One :class:`~seqpoint.executors.Job` per
distinct configuration goes to the executor, whose driver alone uses the cache (an
interrupted sweep resumes; failed points are recorded); each configuration is projected on
the shared schedule model and compared with the base: ``speedup = T_base / T_config``.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqpoint._live import Reporter
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.executors import Executor, Job, RayExecutor, SweepStats, make_executor
from seqpoint.measurements import (
    STEADY_TIME,
    Measurements,
    environment_manifest,
    write_measurements,
)
from seqpoint.measurements.metrics import INSTRUCTIONS, RUN_TIME, derived_of
from seqpoint.projection import Projection, Speedup
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints, write_seqpoints
from seqpoint.workflows._campaign import Campaign
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._stages import choose_points
from seqpoint.workflows._sweep_config import SweepConfig, SweepEntry, load_sweep

__all__ = ["ConfigResult", "SweepResult", "sweep"]

@dataclass(frozen=True, kw_only=True)
class ConfigResult:
    """One configuration of a sweep: its measurements, projection and speedup over the base."""

    name: str
    """Configuration name (``base`` for the reference)."""
    overrides: dict[str, Any]
    """Dotted ``section.key`` to the value set on the base."""
    measurements: Measurements
    """Its measurements of the shared SeqPoints."""
    projection: Projection | None
    """The projected run; None when every point failed."""
    speedup: Speedup | None
    """``T_base / T_config`` of the sweep's time metric; None without one (or a projection)."""

    @property
    def n_failed(self) -> int:
        """SeqPoints whose measurement failed (OOM or error)."""
        return sum(not m.ok for m in self.measurements.measurements)

    @property
    def complete(self) -> bool:
        """Every SeqPoint measured, in this configuration and (for the speedup) in the base."""
        ok = self.projection is not None and self.projection.complete
        return ok and (self.speedup is None or self.speedup.complete)

    def to_dict(self) -> dict[str, Any]:
        """One entry of ``configs`` in ``seqpoint sweep --json``."""
        p, s = self.projection, self.speedup
        return {
            "name": self.name,
            "overrides": dict(self.overrides),
            "projected": dict(p.totals) if p else {},
            "interval": {k: [lo, hi] for k, (lo, hi) in p.interval.items()} if p else {},
            "speedup": s.value if s else None,
            "speedup_interval": list(s.interval) if s else None,
            "complete": self.complete,
            "failed": self.n_failed,
        }


@dataclass(frozen=True, kw_only=True)
class SweepResult:
    """Everything a sweep produced, and where it was written."""

    spec: SweepConfig
    """The sweep (base and grid)."""
    folder: RunFolder
    """Where the outputs are."""
    schedule: IterationSchedule
    """The shared replayed run."""
    seqpoints: SeqPoints
    """The shared SeqPoints."""
    configs: tuple[ConfigResult, ...]
    """The base first, then the grid in file order."""
    time_metric: str | None
    """Time metric projected and compared (``run_time_s`` or ``time_s``, ``run_instructions`` or
    ``instructions`` with that timer); None without one every configuration has."""
    executor: str
    """``local``, ``ray`` or ``submitit``."""
    stats: SweepStats
    """What the executor did (pairs, cached, measured, tasks, probes)."""
    failed: int
    """Distinct (configuration, signature) pairs that failed."""
    wall_s: float
    """Wall time of profiling, seconds."""

    @property
    def run_stats(self) -> dict[str, float]:
        """The executor's figures and the profiling wall time, as plain numbers."""
        return {"pairs": self.stats.pairs, "measured": self.stats.measured,
                "cached": self.stats.cached, "failed": self.failed, "tasks": self.stats.tasks,
                "probes": self.stats.probes, "wall_s": self.wall_s}

    def to_dict(self) -> dict[str, Any]:
        """What ``sweep.json`` and ``seqpoint sweep --json`` hold."""
        return {
            "name": self.spec.name,
            "configs": [c.to_dict() for c in self.configs],
            "n_iterations": len(self.schedule),
            "n_points": len(self.seqpoints),
            "time_metric": self.time_metric,
            "executor": self.executor,
            "stats": self.run_stats,
        }


def sweep(
    spec: SweepConfig | str | Path, executor: Executor | str | None = None, *, address: str | None = None,
    num_cpus: int | None = None, out: str | Path | None = None, reporter: Reporter | None = None,
) -> SweepResult:
    """Measure every configuration of ``spec`` (a :class:`SweepConfig` or the path of a sweep
    file) on the base's SeqPoints and project each, into the run folder ``out`` (default the
    base's ``[report] out``): ``config.toml``, ``sweep_spec.json``, ``schedule.csv``,
    ``seqpoints.json``, ``environment.json``, ``measurements_<NN>-<name>.json``, ``sweep.json``,
    ``sweep.csv`` and, per ``[report]``, ``sweep.png`` and ``report.html``.

    ``executor`` is an executor object or name (default: the base's ``[profile] executor`` and
    ``address``); ``address`` and ``num_cpus`` are a named Ray executor's. A Ray executor made
    here connects before the schedule is replayed (an unreachable address fails at once), and a
    local Ray it started is shut down at the end."""
    if not isinstance(spec, SweepConfig):
        spec = load_sweep(spec)
    if executor is not None and not isinstance(executor, str):
        if address is not None or num_cpus is not None:
            raise ConfigError("sweep(): address and num_cpus make a named executor (\"ray\"); an executor object "
                              "given is used as it is: give them to it, e.g. RayExecutor(address=..., num_cpus=...).")
        return _sweep(spec, executor, out=out, reporter=reporter)
    if executor is None:
        executor, address = spec.base.profile.executor, address or spec.base.profile.address
    ex = make_executor(executor, address=address, num_cpus=num_cpus)
    if not isinstance(ex, RayExecutor):
        return _sweep(spec, ex, out=out, reporter=reporter)
    with ex:
        ex.connect()
        return _sweep(spec, ex, out=out, reporter=reporter)


def _sweep(spec: SweepConfig, executor: Executor, *, out: str | Path | None, reporter: Reporter | None) -> SweepResult:
    from seqpoint.reports import write_sweep_report

    base = spec.base
    folder = RunFolder.new(spec.name, str(out) if out is not None else base.report.out, command="sweep")
    c = Campaign(base, reporter=reporter, executor=executor, folder=folder)
    folder.write_json("sweep_spec.json", spec.to_dict())
    schedule = c.schedule
    # The formula proxy of [selection], no workload: the configurations differ in theirs.
    _, seqpoints = choose_points(base.selection, schedule)
    write_seqpoints(seqpoints, folder.file("seqpoints.json"))
    folder.write_json("environment.json", environment_manifest())

    entries = spec.configurations
    jobs, job_of = _jobs(entries, seqpoints)
    t0 = time.perf_counter()
    results = executor.profile(jobs, cache=c.cache, reporter=c.reporter)
    wall_s = time.perf_counter() - t0
    failed = sum(len({m.signature for m in ms.measurements if not m.ok}) for ms in results)
    stats = executor.last_stats or SweepStats(pairs=0, cached=0, measured=0, tasks=0, probes=0)

    measured = [results[j] for j in job_of]
    for i, (entry, ms) in enumerate(zip(entries, measured, strict=True)):
        write_measurements(ms, folder.file(f"measurements_{_slug(i, entry.name)}.json"))
    configs, metric = _project_all(c, seqpoints, entries, measured)
    result = SweepResult(
        spec=spec, folder=folder, schedule=schedule, seqpoints=seqpoints, configs=configs, time_metric=metric,
        executor=getattr(executor, "kind", "local"), stats=stats, failed=failed, wall_s=wall_s)
    folder.write_json("sweep.json", result.to_dict())
    write_sweep_report(result, folder.path, plots=base.report.plots, html=base.report.html,
                       config_text=base.to_toml(), title=f"seqpoint sweep: {spec.name}",
                       subtitle=f"{base.workload.name} · {base.describe_run()} · {len(configs)} configurations")
    return result


def _jobs(entries: Sequence[SweepEntry], seqpoints: SeqPoints) -> tuple[list[Job], list[int]]:
    """One job per distinct (workload, overrides, harness), and each entry's job index: a grid
    point equal to the base is not measured twice, even without a cache."""
    jobs: list[Job] = []
    index: dict[str, int] = {}
    job_of: list[int] = []
    for entry in entries:
        cfg = entry.config
        harness = cfg.profile.harness
        key = json.dumps([cfg.workload.name, cfg.workload.set, harness.to_dict()], sort_keys=True, default=str)
        if key not in index:
            index[key] = len(jobs)
            jobs.append(Job(workload=cfg.workload.name, overrides=dict(cfg.workload.set),
                            config=harness, points=seqpoints))
        job_of.append(index[key])
    return jobs, job_of


def _project_all(c: Campaign, seqpoints: SeqPoints, entries: Sequence[SweepEntry],
                 measured: Sequence[Measurements]) -> tuple[tuple[ConfigResult, ...], str | None]:
    """Project each configuration on one schedule model, and its speedup over the base."""
    from seqpoint.projection import project, project_speedup

    schedule, model = c.schedule, c.model
    projections: list[Projection | None] = []
    for entry, ms in zip(entries, measured, strict=True):
        sec = entry.config.projection
        try:
            projections.append(project(schedule, seqpoints, ms, method=sec.method, confidence=sec.confidence,
                                       context=model))
        except InputError:  # every point failed: the configuration is reported, not projected
            projections.append(None)
    metric = _time_metric([p for p in projections if p is not None])
    out: list[ConfigResult] = []
    for entry, ms, proj in zip(entries, measured, projections, strict=True):
        sp = None
        if metric is not None and proj is not None and projections[0] is not None:
            with contextlib.suppress(InputError):  # a zero total: no ratio to report
                sp = project_speedup(schedule, seqpoints, measured[0], ms, metric=metric, context=model)
        out.append(ConfigResult(name=entry.name, overrides=dict(entry.overrides),
                                measurements=ms, projection=proj, speedup=sp))
    return tuple(out), metric


def _time_metric(projections: Sequence[Projection]) -> str | None:
    """The time every projection has: whole-run time with cold steps if all have it, so the
    configurations are compared on one metric; in instructions with that timer."""
    for metric in (RUN_TIME, STEADY_TIME, derived_of(INSTRUCTIONS)[1], INSTRUCTIONS):
        if projections and all(metric in p.totals for p in projections):
            return metric
    return None


def _slug(i: int, name: str) -> str:
    """A file-name-safe, unique stem for configuration ``i``."""
    return f"{i:02d}-" + (re.sub(r"[^A-Za-z0-9_.=+-]+", "_", name).strip("_") or "config")
