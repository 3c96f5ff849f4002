"""The multi-process measurement protocol (:func:`profile_protocol`).

One process has a speed of its own: re-profiling the same SeqPoints in a fresh process
moved a projection by 0.6-3.0%, more than the repeats' noise. As pyperf does, each point's
repeats are spread over ``processes`` fresh processes, one after another; within one the
points run round-robin, so a slow drift hits every point alike. The campaign's first point
is timed at the start and the end of every process: the change is its drift, warned about
above its noise. Each measurement keeps its per-process medians and their standard error.

A worker gets its workload as a :class:`ShippedWorkload`: rebuilt there from its
``load_workload`` recipe (a large model is quicker to build than to copy), or else the object
itself, pickled (with cloudpickle when installed, which carries classes of a script run as
``__main__``, or of a module loaded from a file, by value).
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import statistics
import sys
import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from seqpoint._signature import Signature, signature_fields
from seqpoint.clocks import in_callgrind, in_fresh_process, step_timer, time_stats
from seqpoint.exceptions import ConfigError, SeqPointError, SeqPointWarning
from seqpoint.measurements import Measurement, ProcessState, per_process_key
from seqpoint.measurements.metrics import PROCESSES, first_of, step_metric
from seqpoint.profiling._config import ProfileConfig
from seqpoint.profiling._failures import CudaLost, failed_measurement, guarded, name_of
from seqpoint.profiling._startup import (
    compile_summary,
    interleave_block,
    onednn_cache_capacity,
    onednn_metrics,
    recompiled,
    startup_state,
)
from seqpoint.profiling._state import WorkloadState
from seqpoint.workloads import BatchShape, Workload, WorkloadRecipe, describe

__all__ = ["DriftWarning", "ShippedWorkload", "WorkerResult", "WorkerTask", "fresh_worker", "profile_protocol",
           "run_worker", "signature_of", "split_repeats"]

#: A point a worker times: its signature, or the BatchShape of a workload that takes one.
WorkerPoint = Signature | BatchShape


class DriftWarning(SeqPointWarning):
    """A worker process's speed changed between its start and its end by more than its noise."""


def split_repeats(repeats: int, processes: int) -> list[int]:
    """Timed repeats of each process: ``repeats`` spread as evenly as possible (earlier ones get more)."""
    base, extra = divmod(repeats, processes)
    return [base + (1 if p < extra else 0) for p in range(processes)]


def fresh_worker(task: WorkerTask) -> WorkerResult:
    """:func:`run_worker` of ``task`` in a fresh process (the protocol's default runner), under
    callgrind for the ``instructions`` timer."""
    return in_fresh_process(run_worker, task, callgrind=in_callgrind(task.timer))


@dataclasses.dataclass(frozen=True, kw_only=True)
class ShippedWorkload:
    """A workload as a worker process receives it (pickled with its task): its ``name``, for
    messages, and the ``recipe`` that rebuilds it with ``load_workload`` or else the object itself
    ``pickled`` (cloudpickle when installed)."""

    name: str
    recipe: WorkloadRecipe | None = None
    pickled: bytes = b""

    @classmethod
    def of(cls, workload: Workload, *, recipe: WorkloadRecipe | None = None, what: str = "[profile] processes > 1",
           fix: str = "set [profile] processes = 1") -> ShippedWorkload:
        """What a worker process needs to get ``workload``: ``recipe`` (the one it was built from),
        a reference workload's own (``WorkloadRecipe.of_workload``), or the object
        pickled; a one-line ConfigError naming ``what`` sends it and ``fix`` when none works."""
        name = name_of(workload)
        recipe = recipe or WorkloadRecipe.of_workload(workload)
        if recipe is not None:
            return cls(name=name, recipe=recipe)
        try:
            return cls(name=name, pickled=_dumps(workload))
        # What pickle and cloudpickle raise: an object they refuse (TypeError), a local class
        # (AttributeError), a refused reducer (PicklingError), a cycle too deep (RecursionError).
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
            why = (str(exc).strip().splitlines() or [""])[0][:200]
            raise ConfigError(
                f"{what} sends the workload to fresh worker processes, but {type(workload).__name__} does not "
                f"pickle ({type(exc).__name__}: {why}); give it as path/to/file.py:function (a function that "
                f"builds it) so that each worker builds its own, or {fix}."
            ) from None

    def build(self) -> Workload:
        """The workload, in this process: rebuilt from its recipe or unpickled."""
        if self.recipe is not None:
            return self.recipe.build()
        workload: Workload = pickle.loads(self.pickled)
        return workload


class _PlainPickler(pickle.Pickler):
    """The standard pickle, refusing what a worker could not unpickle: a class or function
    of the script run as ``__main__`` (the worker's ``__main__`` is not that script)."""

    def reducer_override(self, obj: object) -> types.NotImplementedType:
        if isinstance(obj, type | types.FunctionType) and getattr(obj, "__module__", None) == "__main__":
            raise pickle.PicklingError(
                f"{obj.__qualname__} is defined in the script run as __main__, which a worker process "
                "imports only by value (pip install cloudpickle)")
        return NotImplemented


def _unimportable(workload: Workload) -> list[types.ModuleType]:
    """Modules of the workload's classes that a worker could not import by name (loaded from
    a file by ``importlib``, not on ``sys.path``)."""
    from importlib.machinery import PathFinder

    found: list[types.ModuleType] = []
    for cls in type(workload).__mro__:
        mod = sys.modules.get(cls.__module__)
        if mod is None or mod.__name__ in ("builtins", "__main__") or any(mod is m for m in found):
            continue
        top = mod.__name__.partition(".")[0]
        if top not in sys.builtin_module_names and PathFinder.find_spec(top, sys.path) is None:
            found.append(mod)
    return found


def _dumps(workload: Workload) -> bytes:
    try:
        import cloudpickle
    except ImportError:
        buf = io.BytesIO()
        _PlainPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(workload)
        return buf.getvalue()
    by_value = _unimportable(workload)
    for mod in by_value:
        cloudpickle.register_pickle_by_value(mod)
    try:
        data: bytes = cloudpickle.dumps(workload, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        for mod in by_value:
            cloudpickle.unregister_pickle_by_value(mod)
    return data


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkerTask:
    """What one worker process measures (pickled to it): the ``points`` to time, in campaign order
    (the first is the drift check point), after the start-up on ``decoy``; ``warmup`` untimed steps
    of each (the first, cold one timed apart), ``repeats`` timed ones (stopped once they took
    ``max_seconds``, 0: no limit), round-robin with ``interleave`` (else point after point), and
    ``drift_steps`` of the check point at the start and at the end. ``process`` is the campaign's
    process state: applied before the workload is built, the worker refused when its own differs
    once the workload runs (None: as the worker finds it)."""

    workload: ShippedWorkload
    points: tuple[WorkerPoint, ...]
    decoy: Signature | None
    warmup: int
    repeats: int
    drift_steps: int
    timer: str
    interleave: bool
    max_seconds: float
    process: ProcessState | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkerResult:
    """What one worker process measured, by position in its task's ``points``: each one's timed
    repeats (``times``) and cold first step (``first``), seconds, or the record of its failure
    (``failed``); the check point's steps at the start and at the end (``start_s``, ``end_s``);
    the oneDNN primitives a new shape creates and shares (None: not counted) and the cache's
    ``capacity``; torch.compile's seconds and graphs after the start-up (``recompiled``: a fresh
    process recompiles as a run does; None where nothing compiled)."""

    times: list[list[float]]
    first: dict[int, float]
    failed: dict[int, Measurement]
    start_s: list[float]
    end_s: list[float]
    primitives: tuple[int, int] | None = None
    capacity: int = 1024
    compiled: tuple[float, int] | None = None


def run_worker(task: WorkerTask) -> WorkerResult:
    """Measure ``task`` in this process (the body of one worker process)."""
    if task.process is not None:
        task.process.apply()
    points = list(task.points)
    sigs = [signature_of(p) for p in points]
    kept = WorkloadState()
    try:
        workload = task.workload.build()
        state = startup_state(workload, kept, task.decoy, sigs)
    except SeqPointError:
        raise
    except Exception as exc:  # a model too large for the device, a start-up that lost the CUDA context:
        return WorkerResult(times=[[] for _ in points], first={}, failed={i: failed_measurement(s, exc)  # every
                            for i, s in enumerate(sigs)}, start_s=[], end_s=[])  # point fails, not the campaign
    clock = step_timer(task.timer, describe(workload).devices)
    if task.process is not None:  # once the workload has set what it sets (its threads, its flags)
        ProcessState.capture().check(task.process, where="A worker process")
    times: list[list[float]] = [[] for _ in points]
    first: dict[int, float] = {}
    failed: dict[int, Measurement] = {}
    batches: dict[int, object] = {}

    def step(i: int, timed: bool) -> float:
        """One step of point ``i`` (timed or not); a failure marks the point failed, no more steps."""
        if i in failed:
            return 0.0

        def run() -> float:
            if i not in batches:
                batches[i] = workload.make_batch(points[i])  # type: ignore[arg-type]  # a BatchShape only to a workload that takes one
            batch = batches[i]
            if timed:
                return clock(lambda: workload.step(batch))
            workload.step(batch)
            return 0.0

        try:
            out = guarded(workload, sigs[i], run)  # a failure is the point's status; the others go on
        except CudaLost as lost:  # no more CUDA work in this process: every point left says why
            failed.update({j: failed_measurement(sigs[j], str(lost)) for j in range(len(points)) if j not in failed})
            return 0.0
        if isinstance(out, Measurement):
            failed[i] = out
            batches.pop(i, None)
            return 0.0
        return out

    def warm(i: int) -> None:
        if task.warmup:
            dt = step(i, True)  # the shape's first step in this process: cold
            if i not in failed:
                first[i] = dt
        for _ in range(task.warmup - 1):
            step(i, False)

    check = 0
    warm(check)
    start = [step(check, True) for _ in range(task.drift_steps)]
    # Round-robin over blocks of points whose oneDNN primitives fit its cache together:
    # over more shapes, every timed step would re-create its evicted primitives (cold).
    size = interleave_block(state.primitives, onednn_cache_capacity())
    width = size if task.interleave else 1
    for lo in range(0, len(points), width):
        block = range(lo, min(lo + width, len(points)))
        for i in block:
            if i != check:
                warm(i)
        for _ in range(task.repeats):
            for i in block:
                if i not in failed and not (task.max_seconds and sum(times[i]) >= task.max_seconds):
                    dt = step(i, True)
                    if i not in failed:
                        times[i].append(dt)
    state.seen.update(sigs)
    step(check, False)  # its primitives may have been evicted since the start check
    end = [step(check, True) for _ in range(task.drift_steps)]
    return WorkerResult(times=times, first=first, failed=failed, start_s=start, end_s=end,
                        primitives=state.primitives, capacity=onednn_cache_capacity(), compiled=recompiled(kept))


def _drift(start: list[float], end: list[float]) -> dict[str, Any]:
    """Relative change of the check point's median from start to end, and its noise (≈95%)."""
    m0, m1 = statistics.median(start), statistics.median(end)
    drift = m1 / m0 - 1.0 if m0 > 0 else 0.0
    noise = 0.0
    if len(start) >= 2 and len(end) >= 2 and m0 > 0:
        se = (statistics.variance(start) / len(start) + statistics.variance(end) / len(end)) ** 0.5
        noise = 2.0 * se / m0
    return {"start_s": m0, "end_s": m1, "drift": drift, "noise": noise, "above_noise": abs(drift) > noise}


def profile_protocol(
    shipped: ShippedWorkload, points: Sequence[WorkerPoint], config: ProfileConfig, decoy: Signature | None, *,
    run: Callable[[int, WorkerTask], WorkerResult] | None = None, label: str | None = None,
    process: ProcessState | None = None,
) -> tuple[dict[WorkerPoint, Measurement], dict[str, Any]]:
    """Time ``points`` (distinct, in campaign order) in ``config.processes`` workers, each
    starting up on ``decoy``. ``run(p, task)`` runs worker ``p``'s :class:`WorkerTask`
    (default: :func:`fresh_worker`); ``label`` names the campaign in a drift warning; every worker
    runs in ``process`` (a ConfigError when one cannot).

    Returns each point's Measurement with the ``time`` metrics only, and the protocol's
    report (``processes``, ``interleave``, ``repeats_per_process``, ``check``, per process
    ``drift``: ``start_s``, ``end_s``, ``drift``, ``noise``, ``above_noise``; and ``compile``,
    :func:`compile_summary` of the workers).
    """
    shares = split_repeats(config.repeats, config.processes)
    results = []
    for p, share in enumerate(shares):
        # a count is not seconds: the time budget does not apply to it
        budget = 0.0 if in_callgrind(config.timer) else config.max_seconds_per_point / config.processes
        task = WorkerTask(workload=shipped, points=tuple(points), decoy=decoy, warmup=config.warmup, repeats=share,
                          drift_steps=config.drift_steps, timer=config.timer, interleave=config.interleave,
                          max_seconds=budget, process=process)
        results.append(fresh_worker(task) if run is None else run(p, task))
    drifts = [_drift(r.start_s, r.end_s) for r in results]
    check = signature_of(points[0])
    if not in_callgrind(config.timer):  # a count's change is not the machine's speed
        _warn_drift(drifts, check, label)
    step = step_metric(config.timer)
    out = {point: _combine(i, signature_of(point), results, step) for i, point in enumerate(points)}
    onednn = onednn_metrics(results[0].primitives, results[0].capacity)
    for m in out.values():
        if m.ok:
            m.metrics.update(onednn)
    return out, {"processes": config.processes, "interleave": config.interleave, "repeats_per_process": shares,
                 "check": list(check), "drift": drifts, "compile": compile_summary([r.compiled for r in results])}


def signature_of(point: WorkerPoint) -> Signature:
    return point.signature if isinstance(point, BatchShape) else tuple(point)


def _warn_drift(drifts: list[dict[str, Any]], check: Signature, label: str | None) -> None:
    """One warning for the workers that drifted beyond their noise, all named in it."""
    moved = [(p, d) for p, d in enumerate(drifts) if d["above_noise"]]
    if not moved:
        return
    who = " and ".join(f"{p + 1}/{len(drifts)} ({100 * d['drift']:+.2f}%, noise ±{100 * d['noise']:.2f}%)"
                       for p, d in moved)
    warnings.warn(
        f"Worker process{'es' if len(moved) > 1 else ''} {who}{f' of {label}' if label else ''} drifted on the "
        f"check point {check}: the machine's speed changed while {'they' if len(moved) > 1 else 'it'} measured; "
        "the interval counts the spread between the processes' run totals.",
        DriftWarning, stacklevel=3,  # measure_plan's line: here <- profile_protocol
    )


def _combine(i: int, sig: Signature, results: list[WorkerResult], step: str) -> Measurement:
    """The measurement of point ``i`` (of signature ``sig``) from every worker's result, in the
    ``step`` metric (``time_s``, or ``instructions``): the pooled repeats' statistics, their
    per-process spread and the cold step."""
    for r in results:
        if i in r.failed:
            return r.failed[i]
    pooled = [t for r in results for t in r.times[i]]
    per_process = [statistics.median(r.times[i]) for r in results if r.times[i]]
    firsts = [r.first[i] for r in results if i in r.first]
    if not pooled:
        return failed_measurement(sig, "no timed repeat ran")
    sem = statistics.stdev(per_process) / len(per_process) ** 0.5 if len(per_process) >= 2 else 0.0
    metrics = {**time_stats(pooled, step), PROCESSES: float(len(per_process)), f"{step}_sem": sem}
    if firsts:
        metrics[first_of(step)] = statistics.median(firsts)
    return Measurement(**signature_fields(sig), metrics=metrics, samples={step: pooled, per_process_key(step): per_process})
