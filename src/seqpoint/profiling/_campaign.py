"""A profiling campaign over one workload (:class:`Profiler`): what the cache holds and what is
left, measured here or in fresh worker processes, each point cached as it finishes. A timed
window of a run (:meth:`Profiler.window`) steps consecutive iterations in order in one fresh
process: a shape's first step in the run's own order, which the cold-step term calibrates on."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from seqpoint._live import Reporter
from seqpoint._rng import keeps_rngs
from seqpoint._signature import Signature
from seqpoint.cache import MeasurementCache
from seqpoint.clocks import TIMERS, check_timer, in_callgrind, in_fresh_process, step_timer
from seqpoint.exceptions import ConfigError
from seqpoint.measurements import Measurement, Measurements, ProcessState, StepWindow
from seqpoint.profiling._config import ProfileConfig
from seqpoint.profiling._failures import CudaLost, failed_measurement, memory_refusal, parked
from seqpoint.profiling._plan import CampaignKey, Plan, Points, Unit
from seqpoint.profiling._point import profile_point
from seqpoint.profiling._protocol import (
    ShippedWorkload,
    WorkerResult,
    WorkerTask,
    fresh_worker,
    profile_protocol,
    signature_of,
)
from seqpoint.profiling._startup import (
    campaign_decoy,
    check_recompiles,
    compile_clock,
    compile_summary,
    recompiled,
    startup_state,
)
from seqpoint.profiling._state import WorkloadState
from seqpoint.workloads import (
    BatchShape,
    SetsThreads,
    Workload,
    WorkloadFacts,
    WorkloadRecipe,
    describe,
)

__all__ = ["Profiler", "profile_points"]


class Profiler:
    """Measures points of one workload, in this process or in fresh worker processes.

    ``cache`` is looked up first and each point measured ok written as it finishes (a killed
    campaign resumes with what is missing); ``reporter`` shows progress bars, the line after each
    worker process and its hooks (default: silent); ``recipe`` is how a worker builds the same
    workload (``load_workload(spec, overrides)``; without one a reference workload is rebuilt from
    its name and config, anything else travels pickled). A profiler remembers which shapes its
    workload stepped in this process (their first step is no longer cold) and runs the process
    start-up once, keeping both in itself, not on the workload or in a table of the module: make
    one per workload and keep it.
    """

    def __init__(self, workload: Workload, *, cache: MeasurementCache | None = None,
                 reporter: Reporter | None = None, recipe: WorkloadRecipe | None = None) -> None:
        self.workload = workload
        self.facts: WorkloadFacts = describe(workload)
        self.cache = cache
        self.reporter = reporter or Reporter(progress=False)
        self.recipe = recipe
        self.state = WorkloadState()

    @property
    def name(self) -> str:
        """What progress and warnings call the campaign: the reporter's label, else the workload's name."""
        return self.reporter.label or self.facts.name

    def key(self) -> CampaignKey:
        """The cache key's inputs of this workload in this process (without the code hash when
        nothing is cached)."""
        files = () if self.recipe is None else self.recipe.source_files
        return CampaignKey.of(self.workload, self.facts, code=self.cache is not None, source_files=files)

    def plan(self, points: Points, config: ProfileConfig | None = None) -> Plan:
        """What each point is measured as, what the cache holds, what is left."""
        return Plan.of(points, self.key(), config or ProfileConfig(), self.cache)

    def measure(self, points: Points, config: ProfileConfig | None = None) -> Measurements:
        """Measure a campaign of points (see :func:`profile_points`)."""
        return self.run(self.plan(points, config))

    def process(self) -> ProcessState:
        """This process's state as the workload runs in it (its threads set first): what every
        worker and window process runs in."""
        if isinstance(self.workload, SetsThreads):
            self.workload.apply_threads()
        return ProcessState.capture()

    def shipped(self, what: str = "[profile] processes > 1", fix: str = "set [profile] processes = 1") -> ShippedWorkload:
        """The workload as a worker process gets it (ConfigError naming ``what`` and ``fix`` when
        it neither has a recipe nor pickles)."""
        return ShippedWorkload.of(self.workload, recipe=self.recipe, what=what, fix=fix)

    def point(self, signature: Sequence[int], config: ProfileConfig | None = None, *, iteration: int = -1,
              weight: float | None = None, shape: BatchShape | None = None) -> Measurement:
        """Measure one training step of ``signature`` (``(batch_size, seq_len, tgt_len[, sum_sq_len])``).

        ``config``: warm-up, repeats, timer and metrics (default: time only, 2 + 5 steps, wall);
        ``iteration``: the schedule iteration it stands for (recorded, -1 when none); ``weight``: the
        iterations it stands for, written into its Kineto trace's metadata (``seqpoint_weight``);
        ``shape``: the iteration's real lengths, passed to ``make_batch`` instead of the signature
        (only for a workload with ``takes_batch_shape``).

        ``metrics``: ``time_s`` (median, seconds), ``time_s_iqr``, ``time_s_min``, ``time_s_max``,
        ``time_s_std``, ``repeats``; ``time_s_first`` (the first step of a shape the profiler never
        stepped, when ``warmup >= 1``); the oneDNN primitive counts on a CPU; ``flops``; ``bytes``,
        ``ops``; ``roofline_<gpu>_s``; ``peak_mem_bytes`` (the step's own: state and activations; on
        CUDA also the allocator's ``peak_reserved_bytes``); ``breakdown_total_s``. ``breakdown_s``:
        seconds per step per operation category; ``samples["time_s"]``: the timed repeats. With
        ``config.kineto_dir`` the profiled steps are also written as a chrome trace
        (:func:`kineto_trace_path`). A step that runs out of memory gives ``status="oom"``, one that
        raises ``status="error"``, each with the message.
        """
        return profile_point(self.workload, tuple(int(v) for v in signature), config or ProfileConfig(),
                             iteration=int(iteration), weight=weight, shape=shape, state=self.state, facts=self.facts)

    def check_shared_gpu(self, environment: Mapping[str, Any], what: str) -> None:
        """ConfigError when ``what`` would start processes on a GPU that takes one process at a
        time (``EXCLUSIVE_PROCESS`` compute mode, as many Slurm clusters set): this one holds it."""
        mode = str(environment.get("compute_mode", ""))
        if mode.lower().startswith("exclusive"):
            raise ConfigError(
                f"{environment.get('device', 'The GPU')} is in {mode} compute mode: one process at a time, and this "
                f"one holds it, so {what} (fresh processes on it) would fail. Set [profile] processes = 1 and "
                "cold_window = 0, measure on an executor whose tasks each own the GPU (--executor ray or submitit), "
                "or ask for the Default compute mode.")

    def window(self, steps: Sequence[Sequence[int] | BatchShape], *, start: int, timer: str) -> StepWindow:
        """Time one step of each of ``steps`` (of schedule iterations ``start, start + 1, ...``; for a
        workload that takes one, BatchShapes with the real lengths), in order, with a clock ``timer``,
        in one fresh process that runs in this process's state (:meth:`process`)."""
        if self.facts.on_cuda:
            self.check_shared_gpu(self.key().environment, "[profile] cold_window")
        shipped = self.shipped("A step window ([profile] cold_window)",
                               "calibrate the cold term from the points' first steps (cold_window = 0)")
        shapes = [s if isinstance(s, BatchShape) else tuple(int(v) for v in s) for s in steps]
        sigs = [signature_of(s) for s in shapes]
        TIMERS.get(timer)
        if in_callgrind(timer):
            raise ConfigError(f"A step window records seconds; the {timer!r} timer counts instructions. Use a clock "
                              "timer (wall, cpu, cuda), or the points' first steps for the cold-step term.")
        with parked(self.workload) if self.facts.on_cuda else contextlib.nullcontext():
            times = in_fresh_process(time_window, shipped, shapes, campaign_decoy(sigs), timer, self.process())
        return StepWindow(start=int(start), signatures=tuple(sigs), times_s=tuple(float(t) for t in times))

    @keeps_rngs
    def run(self, plan: Plan) -> Measurements:
        """Measure ``plan``'s pending units (with ``processes > 1`` or the ``instructions`` timer,
        their time in fresh worker processes first), cache each as it finishes, and assemble
        the campaign. The global random states are restored on return."""
        assert plan.key is not None, "a plan measured here knows its key"
        config, todo = plan.config, plan.todo
        if config.stepped:
            check_timer(config.timer, self.facts.device, workload=self.facts.name)
            if self.facts.compiled:
                check_recompiles(self.workload, len(plan.signatures))
        if config.in_workers and self.facts.on_cuda:
            self.check_shared_gpu(plan.key.environment, f"[profile] processes = {config.processes}")
        # A CUDA workload timed in workers: the parent makes no CUDA context (an exclusive-process
        # GPU would refuse the workers), and each worker records its own out-of-memory points.
        parent_free = not (config.in_workers and self.facts.on_cuda)
        refusal: Callable[[Signature], str | None] = (
            functools.partial(memory_refusal, self.workload, self.facts.device, self.state) if parent_free
            else lambda _: None)
        # The start-up steps a shape that fits: a refused point's would allocate what the check refused.
        decoy = campaign_decoy([s for s in plan.signatures if refusal(s) is None])
        done = dict(plan.cached)
        protocol: dict[str, Any] = {}
        compiled_before, stepped = compile_clock(), False
        # Every metric but the time (not a matter of process speed) is measured once, here, and merged with it.
        times: dict[Unit, Measurement] = {}
        if config.in_workers:
            timed = {p.unit: p.unit[0] if p.shape is None else p.shape for p in todo if refusal(p.unit[0]) is None}
            if timed:
                # pickled here, before the parent's copy is parked
                shipped = (self.shipped('[profile] timer = "instructions"', "use a clock timer (wall)")
                           if in_callgrind(config.timer) else self.shipped())
                with contextlib.nullcontext() if parent_free else parked(self.workload):
                    got, protocol = profile_protocol(shipped, list(timed.values()), config, decoy,
                                                     run=self._announcing(len(timed), config),
                                                     label=self.reporter.label, process=self.process())
                times = {unit: got[point] for unit, point in timed.items()}
        others = tuple(m for m in config.metrics if m != "time")
        rest = dataclasses.replace(config, metrics=others, processes=1) if times and others else None
        lost = ""  # the CUDA context, once a failure lost it: no more point runs in this process
        with self.reporter.bar(f"[bold]profile[/] {self.name}", len(todo)) as advance:
            for p in todo:
                sig = p.unit[0]
                advance(0, f"[bold]profile[/] {self.name} {sig}")
                timed_m = times.get(p.unit)
                if lost:
                    m = failed_measurement(sig, f"not run: {lost}")
                elif timed_m is not None and (rest is None or not timed_m.ok):
                    m = timed_m
                elif timed_m is None and (why := refusal(sig)) is not None:
                    m = failed_measurement(sig, why, status="oom")
                else:
                    here = config if timed_m is None or rest is None else rest
                    try:
                        if here.stepped:
                            startup_state(self.workload, self.state, decoy, plan.signatures)
                            stepped = True
                        m = self.point(sig, here, iteration=p.point.iteration, weight=p.point.weight, shape=p.shape)
                    except CudaLost as exc:  # in the start-up's steps or the point's
                        lost = str(exc)
                        m = failed_measurement(sig, lost)
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
            compiled = compile_summary([recompiled(self.state, compiled_before) if stepped else None])
        return Measurements(workload=plan.key.workload, config=plan.key.config, environment=plan.key.environment,
                            measurements=plan.assemble(done), protocol=protocol, compile=compiled)

    def _announcing(self, n_points: int, config: ProfileConfig) -> Callable[[int, WorkerTask], WorkerResult]:
        """The protocol's runner: a fresh worker process, then the reporter's line and hooks."""

        def run(p: int, task: WorkerTask) -> WorkerResult:
            t0 = time.perf_counter()
            result = fresh_worker(task)
            steps = f"{task.repeats} timed step{'' if task.repeats == 1 else 's'}"
            self.reporter.worker_done(p, p == config.processes - 1,
                                      f"[bold]time[/] {self.name}: worker {p + 1}/{config.processes}, "
                                      f"{n_points} points × {steps}, {time.perf_counter() - t0:.1f} s")
            return result

        return run


def profile_points(workload: Workload, points: Points, config: ProfileConfig | None = None, *,
                   cache: MeasurementCache | None = None, progress: bool = True) -> Measurements:
    """Measure ``points`` (SeqPoints, or SeqPoint-like objects and signature tuples) on ``workload``:
    one Measurement per point, in input order (failed points with their status), points with the
    same signature (and real lengths) measured once; ``cache`` as for :class:`Profiler`, of which one
    call is one (its process start-up runs again on the next call); ``progress`` shows a rich
    progress bar. With ``config.processes > 1`` the drift report is ``Measurements.protocol``; with a
    ``torch.compile``d workload, what compiling cost is ``Measurements.compile``. The global random
    states are restored on return, so profiling inside a training process leaves the run's draws
    unchanged.
    """
    return Profiler(workload, cache=cache, reporter=Reporter(progress=progress)).measure(points, config)


def time_window(workload: ShippedWorkload, steps: Sequence[Signature | BatchShape], decoy: Signature | None,
                timer: str, process: ProcessState | None = None) -> list[float]:
    """A window's worker: build the workload (in ``process``'s state) and time one step of each of
    ``steps``, in order, after the process start-up on ``decoy``."""
    if process is not None:
        process.apply()
    built = workload.build()
    clock = step_timer(timer, describe(built).devices)
    startup_state(built, WorkloadState(), decoy, [signature_of(s) for s in steps])
    if process is not None:
        ProcessState.capture().check(process, where="The step window's process")
    # a BatchShape only to a workload that takes one
    return [clock(functools.partial(built.step, built.make_batch(s))) for s in steps]  # type: ignore[arg-type]

