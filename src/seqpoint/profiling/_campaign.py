"""A profiling campaign: every SeqPoint measured once, cache first, with a progress bar
(:func:`profile_points`)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import sys
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from seqpoint._config import to_dict
from seqpoint._live import shows_live
from seqpoint._rng import keeps_rngs
from seqpoint.cache import MeasurementCache
from seqpoint.measurements import Measurement, Measurements, environment_fingerprint
from seqpoint.profiling._config import HARNESS_VERSION, ProfileConfig
from seqpoint.profiling._memory import memory_refusal
from seqpoint.profiling._point import profile_point
from seqpoint.profiling._point_shape import lengths_key, point_shape
from seqpoint.profiling._protocol import WorkerTask, fresh_worker, measure_protocol
from seqpoint.profiling._startup import campaign_decoy, startup_state
from seqpoint.workloads import (
    BatchShape,
    CountsOnMeta,
    SetsThreads,
    Signature,
    Workload,
    takes_batch_shape,
)

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["PointLike", "Points", "key_environment", "profile_points", "workload_code_hash"]


class PointLike(Protocol):
    """A point of a schedule: a ``SeqPoint`` (or a ``Measurement``)."""

    @property
    def iteration(self) -> int: ...

    @property
    def signature(self) -> tuple[int, ...]: ...


class _PointSet(Protocol):
    @property
    def points(self) -> Sequence[PointLike]: ...


#: What a campaign measures: SeqPoints, SeqPoint-like objects, or signature tuples.
Points = _PointSet | Iterable[PointLike | Sequence[int]]


def _items(points: Points) -> list[Any]:
    """The points of a set (``.points``) or of an iterable, which may mix SeqPoint-like
    objects and signature tuples, read once."""
    found = getattr(points, "points", None)
    return list(found if found is not None else cast("Iterable[Any]", points))


def _weights(items: list[Any]) -> dict[int, float]:
    """Iteration → weight of the points that carry one (SeqPoints), for the Kineto metadata."""
    return {int(p.iteration): float(p.weight) for p in items if hasattr(p, "weight")}


def _as_points(items: list[Any]) -> list[tuple[int, Signature]]:
    """``(iteration, signature)`` of each point, in order (iteration -1 for bare tuples)."""
    out: list[tuple[int, Signature]] = []
    for p in items:
        if hasattr(p, "signature"):
            out.append((int(getattr(p, "iteration", -1)), tuple(int(v) for v in p.signature)))
        else:
            out.append((-1, tuple(int(v) for v in p)))
    return out


def _shapes(items: list[Any], workload: Workload) -> dict[int, BatchShape]:
    """Iteration → its real :class:`BatchShape`, for a workload that takes one and points
    that record their lengths (SeqPoints of a schedule with per-row lengths)."""
    found = [p for p in items if hasattr(p, "signature") and hasattr(p, "iteration")]
    if not found or not takes_batch_shape(workload):
        return {}
    name = str(getattr(workload, "name", "workload"))
    shapes = {int(p.iteration): point_shape(p, takes_shape=True, name=name) for p in found}
    return {it: shape for it, shape in shapes.items() if shape is not None}


def _workload_config_dict(workload: Workload) -> dict[str, Any]:
    """The workload's config as plain data (recorded and part of the cache key)."""
    cfg = getattr(workload, "config", None)
    if cfg is None:
        return {}
    if hasattr(cfg, "to_dict"):
        return dict(cfg.to_dict())
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return to_dict(cfg)
    if isinstance(cfg, dict):
        return dict(cfg)
    return {"repr": repr(cfg)}


def _progress(
    todo: list[tuple[int, Signature]], name: str, console: Console | None
) -> Generator[tuple[int, Signature], None, None]:
    """``todo``, one point at a time, advancing a rich progress bar after each."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[bold]profile[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as bar:
        task = bar.add_task(name, total=len(todo))
        for it, sig in todo:
            bar.update(task, description=f"{name} {sig}")
            yield it, sig
            bar.advance(task)


def _worker(
    label: str, processes: int, n_points: int, *, announce: bool, console: Console | None,
    end_turn: Callable[[], None] | None,
) -> Callable[[WorkerTask], dict[str, Any]]:
    """The protocol's runner: a fresh worker process, then (``announce``) one printed
    line, since they run for seconds to minutes with nothing else on the screen, then
    ``end_turn``."""
    import time

    from rich import get_console

    done = [0]

    def run(task: WorkerTask) -> dict[str, Any]:
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


#: Packages whose code the environment fingerprint already pins by version.
_VERSIONED = ("builtins", "torch", "numpy", "typing", "abc", "collections", "functools")


def _module_digest(module: str) -> str | None:
    """sha256 of a module's source file, or None for built-in and versioned modules."""
    if module.split(".", 1)[0] in _VERSIONED:
        return None
    mod = sys.modules.get(module)
    try:
        path = inspect.getsourcefile(mod) if mod is not None else None
        if path is None:
            return None
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except (OSError, TypeError):
        return None


def key_environment(environment: dict[str, Any], code_hash: str) -> dict[str, Any]:
    """What a measurement's cache key records of its environment: the fingerprint and a
    hash of the workload's code (:func:`workload_code_hash`). The one definition, used by
    the serial campaign and by every executor's driver."""
    return {**environment, "workload_code": code_hash}


def workload_code_hash(workload: Workload) -> str:
    """A hash of the code that defines ``workload``: the source files of its class (and
    base classes), of its model's module classes and of the files it names in
    ``source_files`` (a user's ``module:function`` file), plus its model's parameter
    names, shapes and dtypes.

    Part of the cache key, so editing a workload's code measures again instead of
    returning a stale timing. Files are named by module, not path, so the key of the
    same code is the same in every checkout; torch and numpy are pinned by version in
    the environment fingerprint instead.
    """
    modules: set[str] = {c.__module__ for c in type(workload).__mro__}
    model = getattr(workload, "model", None)
    named = getattr(model, "named_parameters", None)
    submodules = getattr(model, "modules", None)
    shapes: list[list[Any]] = []
    if callable(named) and callable(submodules):
        modules |= {type(m).__module__ for m in submodules()}
        shapes = [[n, list(p.shape), str(p.dtype)] for n, p in named()]
    files = {m: d for m in sorted(modules) if (d := _module_digest(m)) is not None}
    for path in sorted(str(p) for p in getattr(workload, "source_files", ()) or ()):
        try:
            with open(path, "rb") as fh:
                files[f"file:{path.rsplit('/', 1)[-1]}"] = hashlib.sha256(fh.read()).hexdigest()
        except OSError:
            files[f"file:{path}"] = "unreadable"
    blob = repr((sorted(files.items()), shapes)).encode()
    return hashlib.sha256(blob).hexdigest()


@keeps_rngs
def profile_points(
    workload: Workload,
    points: Points,
    config: ProfileConfig | None = None,
    *,
    cache: MeasurementCache | None = None,
    progress: bool = True,
    console: Console | None = None,
    between: Callable[[int], None] | None = None,
    end_turn: Callable[[], None] | None = None,
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
        With the protocol (``config.processes > 1``): ``between(p)`` after worker process
        ``p`` (0-based) of every worker but the last, to time other work in the same
        stretch of time as the points (``validate``'s full runs). Not called when every
        point is cached or with one process.
    end_turn : callable, optional
        With the protocol: called after each worker process. ``speedup`` passes the one
        :func:`~seqpoint.profiling.take_turns` gives, so that two configurations'
        workers alternate.
    label : str, optional
        What the progress display calls the campaign (default: the workload's name;
        ``speedup`` adds which configuration it is).

    Returns
    -------
    Measurements
        One measurement per point, in input order (failed points included with their
        status). Points with the same signature are measured once. With
        ``config.processes > 1`` the points' time is measured by the multi-process
        protocol (:func:`~seqpoint.profiling._protocol.measure_protocol`) and its drift
        report is ``Measurements.protocol``.

    Notes
    -----
    torch's global random state (CPU, and CUDA when available) is restored on return,
    so profiling inside a training process leaves the run's random draws unchanged.
    """
    config = config or ProfileConfig()
    items = _items(points)
    todo = _as_points(items)
    weights = _weights(items)
    if isinstance(workload, SetsThreads):
        workload.apply_threads()  # the fingerprint records the thread count the steps will use
    env = environment_fingerprint(workload, harness=HARNESS_VERSION)
    cfg_dict = _workload_config_dict(workload)
    # The key (not the recorded environment) also holds the workload's code: an edited
    # workload must not get the old workload's timings back.
    key_env = key_environment(env, workload_code_hash(workload)) if cache is not None else env
    # Process start-up runs on a shape as large as the campaign's largest (see
    # campaign_decoy), before the first point that is actually measured.
    decoy = campaign_decoy([sig for _, sig in todo])
    name = str(getattr(workload, "name", type(workload).__name__))
    done: dict[Signature, Measurement] = {}
    clones: list[Any] = []

    def meta_clone() -> Any:
        """The workload's meta-device clone (built once per campaign), None for user code."""
        if not clones:
            try:
                clones.append(workload.counting_clone() if isinstance(workload, CountsOnMeta) else None)
            except Exception:  # no clone, no estimate: the point runs as before
                clones.append(None)
        return clones[0]

    shapes = _shapes(items, workload)
    # Measured by the multi-process protocol before the loop (processes > 1), taken below.
    fresh: dict[Any, Measurement] = {}
    protocol: dict[str, Any] = {}

    def key_of(sig: Signature, shape: BatchShape | None = None) -> str:
        """The cache key of ``sig`` (and of its real lengths, for a workload that sees them)."""
        assert cache is not None
        return cache.key(name, cfg_dict, key_env, sig, config.to_dict(), lengths=lengths_key(shape))

    def unit(iteration: int, sig: Signature) -> Any:
        """What is measured once: a signature, or with other lengths, another batch (a
        workload that sees lengths)."""
        shape = shapes.get(iteration)
        return sig if shape is None else (sig, shape.digest())

    if config.processes > 1 and "time" in config.families:
        # Each unit once, as the workers' make_batch gets it: the signature or its BatchShape.
        pending: dict[Any, Signature | BatchShape] = {}
        weight_of: dict[Signature | BatchShape, float] = {}
        for it, sig in todo:
            same, shape = unit(it, sig), shapes.get(it)
            if same in pending or (cache is not None and cache.get(key_of(sig, shape)) is not None):
                continue
            if memory_refusal(workload, meta_clone(), sig) is None:
                pending[same] = sig if shape is None else shape
                if it in weights:
                    weight_of[pending[same]] = weights[it]
        if pending:
            run = _worker(label or name, config.processes, len(pending), announce=progress, console=console,
                          end_turn=end_turn)
            timed, protocol = measure_protocol(workload, list(pending.values()), config, decoy, weights=weight_of,
                                               between=between, run=run, label=label)
            fresh = {same: timed[point] for same, point in pending.items()}

    def run_one(iteration: int, sig: Signature) -> Measurement:
        shape = shapes.get(iteration)
        same = unit(iteration, sig)
        if same in done:
            return dataclasses.replace(done[same], iteration=iteration)
        key = None
        if cache is not None:
            key = key_of(sig, shape)
            hit = cache.get(key)
            if hit is not None:
                done[same] = hit
                return dataclasses.replace(hit, iteration=iteration)
        if same in fresh:
            m = dataclasses.replace(fresh.pop(same), iteration=iteration)
            if cache is not None and key is not None and m.ok:
                cache.put(key, m, workload=name, signature=sig)
            done[same] = m
            return m
        refusal = memory_refusal(workload, meta_clone(), sig)
        if refusal is not None:
            m = Measurement(
                iteration=iteration, batch_size=sig[0], seq_len=sig[1],
                tgt_len=sig[2] if len(sig) > 2 else 0,
                sum_sq_len=sig[3] if len(sig) > 3 else None, status="oom", message=refusal,
            )
            done[same] = m
            return m
        if config.stepped:
            startup_state(workload, decoy, [p for _, p in todo])
        m = profile_point(workload, sig, config, iteration=iteration, weight=weights.get(iteration),
                          shape=shape)
        if cache is not None and key is not None and m.ok:
            cache.put(key, m, workload=name, signature=sig)
        done[same] = m
        return m

    if progress and todo and shows_live(console):
        # closing: a point that raises (a SeqPointError) still ends the bar's display
        with contextlib.closing(_progress(todo, label or name, console)) as steps:
            results = tuple(run_one(it, sig) for it, sig in steps)
    else:
        results = tuple(run_one(it, sig) for it, sig in todo)
    return Measurements(workload=name, config=cfg_dict, environment=env, measurements=results,
                        protocol=protocol)
