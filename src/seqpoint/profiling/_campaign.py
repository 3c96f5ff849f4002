"""A profiling campaign in this process: a plan's pending units measured and cached
(:func:`measure_plan`, what every executor runs), and :func:`profile_points`."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from seqpoint._live import live_bar
from seqpoint._rng import keeps_rngs
from seqpoint.cache import MeasurementCache
from seqpoint.measurements import Measurement, Measurements
from seqpoint.profiling._config import ProfileConfig
from seqpoint.profiling._failures import failed_measurement, name_of
from seqpoint.profiling._memory import MemoryCheck
from seqpoint.profiling._plan import CampaignKey, Plan, Points, Unit, plan_points
from seqpoint.profiling._point import profile_point
from seqpoint.profiling._protocol import WorkerResult, WorkerTask, fresh_worker, profile_protocol
from seqpoint.profiling._startup import (
    campaign_decoy,
    compile_clock,
    compile_summary,
    recompiled,
    startup_state,
)
from seqpoint.workloads import Workload

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["measure_plan", "profile_points"]


def _announcing(label: str, processes: int, n_points: int, *, announce: bool, console: Console | None,
                end_turn: Callable[[], None] | None) -> Callable[[WorkerTask], WorkerResult]:
    """The protocol's runner: a fresh worker process, one printed line after it (a worker runs
    for minutes with nothing else on the screen), then ``end_turn``."""
    from rich import get_console

    done = [0]

    def run(task: WorkerTask) -> WorkerResult:
        t0 = time.perf_counter()
        result = fresh_worker(task)
        done[0] += 1
        if announce:
            steps = f"{task.repeats} timed step{'' if task.repeats == 1 else 's'}"
            (console or get_console()).print(
                f"[bold]time[/] {label}: worker {done[0]}/{processes}, {n_points} points × {steps}, "
                f"{time.perf_counter() - t0:.1f} s", highlight=False)
        if end_turn is not None:
            end_turn()
        return result

    return run


def profile_points(
    workload: Workload, points: Points, config: ProfileConfig | None = None, *,
    cache: MeasurementCache | None = None, progress: bool = True, console: Console | None = None,
    between: Callable[[int], None] | None = None, end_turn: Callable[[], None] | None = None,
    label: str | None = None,
) -> Measurements:
    """Measure a campaign of points; finished points survive an interruption.

    Parameters
    ----------
    workload : Workload
    points : SeqPoints, or an iterable of SeqPoint-like objects and signature tuples
        (mixed: ``validate`` times every other signature in the SeqPoints' campaign)
    config : ProfileConfig, optional
    cache : MeasurementCache, optional
        Looked up first; each point measured ok is written as soon as it finishes, so
        a campaign that is killed resumes and measures only what is missing.
    progress : bool
        Show a rich progress bar.
    console : rich.console.Console, optional
        Where the progress bar is drawn (default: rich's console on stdout).
    between : callable, optional
        With ``config.processes > 1``: ``between(p)`` after worker process ``p`` (0-based)
        of every worker but the last, to time other work in the same stretch of time
        (``validate``'s full runs). Not called when every point is cached.
    end_turn : callable, optional
        With ``config.processes > 1``: called after each worker process (the one
        :func:`~seqpoint.profiling.take_turns` gives, so that campaigns' workers alternate).
    label : str, optional
        What the progress display calls the campaign (default: the workload's name).

    Returns
    -------
    Measurements
        One measurement per point, in input order (failed points included with their
        status); points with the same signature (and real lengths) are measured once.
        With ``config.processes > 1`` the drift report is ``Measurements.protocol``; with a
        ``torch.compile``d workload, what compiling cost is ``Measurements.compile``.

    Notes
    -----
    The global random states (torch's CPU and CUDA, numpy's, Python's) are restored on
    return, so profiling inside a training process leaves the run's draws unchanged.
    """
    config = config or ProfileConfig()
    plan = plan_points(points, CampaignKey.of(workload, code=cache is not None), config, cache)
    return measure_plan(workload, plan, progress=progress, console=console, between=between,
                        end_turn=end_turn, label=label)


@keeps_rngs
def measure_plan(
    workload: Workload, plan: Plan, *, progress: bool = True, console: Console | None = None,
    between: Callable[[int], None] | None = None, end_turn: Callable[[], None] | None = None,
    label: str | None = None,
) -> Measurements:
    """Measure ``plan``'s pending units on ``workload`` (with ``processes > 1`` or the
    ``instructions`` timer, their time in fresh worker processes first), cache each as it finishes, and assemble the campaign
    (arguments as for :func:`profile_points`)."""
    assert plan.key is not None, "a plan measured here knows its key"
    config, todo, campaign = plan.config, plan.todo, plan.signatures
    decoy = campaign_decoy(campaign)
    name = label or name_of(workload)
    refusal = MemoryCheck(workload).refusal
    done = dict(plan.cached)
    protocol: dict[str, Any] = {}
    compiled_before, stepped = compile_clock(), False
    # With processes > 1 the time comes from fresh workers first; every other metric (not a
    # matter of process speed) is measured once, here, and merged with it.
    times: dict[Unit, Measurement] = {}
    if config.in_workers:
        timed = {p.unit: p.unit[0] if p.shape is None else p.shape for p in todo if refusal(p.unit[0]) is None}
        if timed:
            run = _announcing(name, config.processes, len(timed), announce=progress, console=console,
                              end_turn=end_turn)
            got, protocol = profile_protocol(workload, list(timed.values()), config, decoy, between=between,
                                             run=run, label=label)
            times = {unit: got[point] for unit, point in timed.items()}
    others = tuple(m for m in config.metrics if m != "time")
    rest = dataclasses.replace(config, metrics=others, processes=1) if times and others else None
    with live_bar(name, len(todo), console, progress) as advance:
        for p in todo:
            sig = p.unit[0]
            advance(0, f"{name} {sig}")
            if p.unit not in done:
                timed_m = times.get(p.unit)
                if timed_m is not None and (rest is None or not timed_m.ok):
                    m = timed_m
                elif timed_m is None and (why := refusal(sig)) is not None:
                    m = failed_measurement(sig, why, status="oom")
                else:
                    here = config if timed_m is None or rest is None else rest
                    if here.stepped:
                        startup_state(workload, decoy, campaign)
                        stepped = True
                    m = profile_point(workload, sig, here, iteration=p.point.iteration,
                                      weight=p.point.weight, shape=p.shape)
                    if timed_m is not None and m.ok:
                        m = dataclasses.replace(timed_m, metrics={**m.metrics, **timed_m.metrics},
                                                breakdown_s=dict(m.breakdown_s),
                                                samples={**m.samples, **timed_m.samples})
                plan.store(p.unit, m)
                done[p.unit] = m
            advance(1, None)
    # torch.compile's recompiles after the start-up: the workers' (fresh processes, as a run is),
    # else this process's during the campaign; unknown when no step ran here (every point cached)
    compiled = protocol.pop("compile", None)
    if compiled is None:
        compiled = compile_summary([recompiled(workload, compiled_before) if stepped else None])
    key = plan.key
    return Measurements(workload=key.workload, config=key.config, environment=key.environment,
                        measurements=plan.assemble(done), protocol=protocol, compile=compiled)
