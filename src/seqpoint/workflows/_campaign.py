"""A run configuration's campaign (:class:`Campaign`), owned by its caller: the config tree,
the run's schedule, the workload with its facts, the executor and the profiler that keeps
what it learnt, the cache and one reporter. ``run``, ``validate``, ``speedup``, ``sweep``,
``project_job`` and every command build one and call its stages, each writing its file to
the run folder as soon as it ends."""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from seqpoint._live import Reporter
from seqpoint._signature import Signature
from seqpoint.cache import MeasurementCache
from seqpoint.devices import gpu_named
from seqpoint.exceptions import ConfigError, SeqPointWarning
from seqpoint.executors import Executor, Job, LocalExecutor, make_executor
from seqpoint.measurements import Measurements, environment_manifest, write_measurements
from seqpoint.measurements.metrics import FIRST_STEP_TIME, INSTRUCTIONS, STEADY_TIME
from seqpoint.profiling import Profiler
from seqpoint.projection import DeviceProjection, Projection, RankProjection, ScheduleModel
from seqpoint.schedule import IterationSchedule, write_schedule
from seqpoint.selection import SeqPoint, SeqPoints, write_seqpoints
from seqpoint.validation import ProfilingSaving, profiling_saving, reduction_factor
from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._stages import (
    batch_shapes,
    build_schedule,
    choose_points,
    model_cost,
    read_run_schedule,
    validation_schedule,
)
from seqpoint.workloads import (
    CountsParameters,
    Workload,
    WorkloadFacts,
    WorkloadRecipe,
    describe,
    workload_config,
)

__all__ = ["Campaign", "check_data_parallel", "check_device_projection", "project_data_parallel", "project_onto_device"]


class Campaign:
    """One run configuration measured on its SeqPoints.

    ``executor`` defaults to ``[profile] executor``; ``folder`` receives each stage's file
    (``config.toml``, ``schedule.csv``, ``seqpoints.json``, ``environment.json``,
    ``measurements.json``; ``*_<tag>`` with a ``tag``, a speedup's ``a`` and ``b``), or none
    when None. A ``schedule`` or built ``workload`` given takes the place of the config's (a
    recorded run, a Trainer's step); ``subset`` keeps the part ``[validation]`` runs in full.
    """

    def __init__(self, config: RunConfig, *, reporter: Reporter | None = None,
                 executor: Executor | str | None = None, folder: RunFolder | None = None,
                 schedule: IterationSchedule | None = None, workload: Workload | None = None,
                 subset: bool = False, tag: str = "") -> None:
        self.config, self.folder, self.tag = config, folder, tag
        self.reporter = reporter or Reporter(progress=False)
        self._executor = executor
        self._given = schedule
        self._subset = subset
        self._workload = workload
        self._writes_run = True  # the run's schedule and SeqPoints (not a speedup's B, which shares them)
        self.measurements: Measurements | None = None
        """The SeqPoints' measurements, once :meth:`measure_seqpoints` ran."""
        self.others: Measurements | None = None
        """With ``measure_seqpoints(every_signature=True)``: every other signature of the run."""
        self._write(f"config{self._suffix}.toml", config.to_toml())

    # -- what the campaign holds -----------------------------------------------------
    @property
    def _suffix(self) -> str:
        return f"_{self.tag}" if self.tag else ""

    def _write(self, name: str, text: str) -> None:
        if self.folder is not None:
            self.folder.write_text(name, text)

    @functools.cached_property
    def _run(self) -> tuple[IterationSchedule, str, IterationSchedule | None]:
        """The schedule selection and profiling see, its length unit, and a data-parallel run's
        every-rank schedule (None for a single process)."""
        if self._given is not None:
            schedule = self._given
        elif self.config.batching.schedule is not None:
            schedule = read_run_schedule(self.config.batching.schedule)
            if self.config.batching.rank is not None:
                schedule = schedule.for_rank(self.config.batching.rank)
        else:
            schedule = build_schedule(self.config.lengths, self.config.batching)
        unit = str(schedule.meta.get("unit", "tokens"))
        if self._subset:
            schedule = validation_schedule(self.config, schedule)
        if self.folder is not None and self._writes_run:
            write_schedule(schedule, self.folder.file("schedule.csv"))
        if schedule.rank is None:
            return schedule, unit, None
        check_data_parallel(self.config, schedule)  # before anything is measured
        return schedule.rank_rows(), unit, schedule

    @property
    def schedule(self) -> IterationSchedule:
        """The run's iterations (a data-parallel run's rank rows: every rank's batch an iteration)."""
        return self._run[0]

    @property
    def unit(self) -> str:
        """The unit of its sequence lengths."""
        return self._run[1]

    @property
    def ranks(self) -> IterationSchedule | None:
        """A data-parallel run's schedule (``rank`` column); None for one process."""
        return self._run[2]

    @functools.cached_property
    def model(self) -> ScheduleModel:
        """The schedule's projection model, built once for every projection of this run."""
        return ScheduleModel.from_schedule(self.schedule)

    @functools.cached_property
    def recipe(self) -> WorkloadRecipe | None:
        """How a worker builds ``[workload]`` (None for a workload given built)."""
        sec = self.config.workload
        return None if self._workload is not None else WorkloadRecipe.of(sec.name, sec.set)

    @functools.cached_property
    def workload(self) -> Workload:
        """The workload, built once (imports torch): the local executor's own, which it measures."""
        return self._workload if self._workload is not None else self.profiler.workload

    @functools.cached_property
    def facts(self) -> WorkloadFacts:
        """Its facts (device, precision, threads), resolved once."""
        return describe(self.workload)

    @functools.cached_property
    def cache(self) -> MeasurementCache | None:
        """The measurement cache of ``[profile]``, or None when disabled."""
        sec = self.config.profile
        return MeasurementCache(sec.cache) if sec.use_cache else None

    @functools.cached_property
    def executor(self) -> Executor:
        """Where points are measured."""
        given, sec = self._executor, self.config.profile
        if given is None or isinstance(given, str):
            return make_executor(given or sec.executor, address=sec.address)
        return given

    @property
    def elsewhere(self) -> str | None:
        """The kind of executor the points are measured on, unless it is this process's."""
        ex = self.executor
        return None if isinstance(ex, LocalExecutor) else str(getattr(ex, "kind", type(ex).__name__))

    @functools.cached_property
    def profiler(self) -> Profiler:
        """The profiler of the workload in this process: the local executor's own; with another
        executor, the one that counts and selects here, on a CUDA workload's CPU stand-in (this
        process makes no CUDA context beside the tasks that own the GPU: a login node needs none)."""
        if isinstance(self.executor, LocalExecutor):
            return self.executor.profiler(self.job(()), reporter=self.reporter, cache=self.cache)
        job = self.job(())
        if self._stand_in:
            job = dataclasses.replace(job, overrides={**job.overrides, "device": "cpu"})
        return LocalExecutor().profiler(job, reporter=self.reporter, cache=self.cache)

    @functools.cached_property
    def _stand_in(self) -> bool:
        """Whether this process's copy is a CPU stand-in: a CUDA workload built from its recipe
        here only to count, its points measured on another executor."""
        return (self._workload is None and "workload" not in self.__dict__ and self.elsewhere is not None
                and str(self._declared("device")).startswith("cuda"))

    def job(self, points: SeqPoints | list[SeqPoint | Signature] | tuple[()]) -> Job:
        """What the executor measures: ``points`` on this campaign's workload and ``[profile]``."""
        recipe = self.recipe
        return Job(workload=self._workload if recipe is None else recipe.spec,  # type: ignore[arg-type]
                   overrides={} if recipe is None else recipe.overrides, config=self.config.profile.harness,
                   points=points, device=None if recipe is not None else self.facts.device)

    # -- the stages -----------------------------------------------------------------
    @functools.cached_property
    def seqpoints(self) -> SeqPoints:
        """The SeqPoints of ``[selection]`` (with ``proxy`` ``model`` or ``model+pilot``, or
        ``auto`` on a reference workload, its exact costs; the pilot timed through this campaign)."""
        sec, schedule = self.config.selection, self.schedule
        if sec.model_proxy and sec.proxy_device is None:
            sec = dataclasses.replace(sec, proxy_device=self._proxy_device())
        cost = (model_cost(sec, schedule, self.workload, measure=self.measure, timer=self.config.profile.timer,
                           state=self.profiler.state) if sec.model_proxy else None)
        points = choose_points(sec, schedule, cost=cost)[1]
        if self.folder is not None and self._writes_run:
            write_seqpoints(points, self.folder.file("seqpoints.json"))
            self.folder.write_json("environment.json", environment_manifest(self._device()))
        return points

    def _proxy_device(self) -> str:
        """``[selection] proxy_device`` by default: the shipped GPU the workload runs on, else
        ``cpu`` (with a warning for a GPU no device file names)."""
        if not self._device().startswith("cuda"):
            return "cpu"
        name = "" if self._stand_in else str(self.profiler.key().environment.get("device", ""))
        if (key := gpu_named(name)) is not None:
            return key
        where = (f"the workload runs on {name!r}, which no shipped device file names in its cuda_names" if name
                 else f"this process does not see the GPU the {self.elsewhere} tasks run on")
        warnings.warn(f"[selection] proxy_device: {where}, so the model proxy ranks iterations by this machine's CPU "
                      "roofline; set proxy_device to the GPU's key or a device file of yours.",
                      SeqPointWarning, stacklevel=2)
        return "cpu"

    def _declared(self, field: str) -> Any:
        """A field of the workload's config (``device``, ``compile``) without building it: the
        built workload's fact once it is built, else the registered config's, else the override."""
        if self._workload is not None or ("workload" in self.__dict__ and not self._stand_in):
            return {"device": self.facts.device, "compile": self.facts.compiled}[field]
        sec = self.config.workload
        cfg = workload_config(sec.name, sec.set)
        return getattr(cfg, field) if cfg is not None else sec.set.get(field, {"device": "cpu"}.get(field))

    def _device(self) -> str:
        return str(self._declared("device"))

    def measure(self, points: SeqPoints | Iterable[SeqPoint | Signature]) -> Measurements:
        """``points`` measured on the executor through the cache (any points: a baseline's, a
        pilot's, every signature)."""
        listed: SeqPoints | list[SeqPoint | Signature] = points if isinstance(points, SeqPoints) else list(points)
        return self.executor.profile([self.job(listed)], cache=self.cache, reporter=self.reporter)[0]

    def measure_seqpoints(self, *, every_signature: bool = False) -> Measurements:
        """Measure the SeqPoints (``every_signature`` also times every signature no SeqPoint has,
        among them: :attr:`others`, ``validate``'s steady-state truth), add the cold-step
        window of ``[profile] cold_window``, and write ``measurements.json``."""
        if self.config.profile.cold_window and (why := self._window_refused()):
            raise ConfigError(why)  # asked for by name: before anything is measured
        seqpoints, schedule = self.seqpoints, self.schedule
        order: list[SeqPoint | Signature] = list(seqpoints.points)
        if every_signature:
            mine = {p.signature for p in seqpoints.points}
            others = [s for s in (tuple(int(v) for v in row) for row in schedule.unique_signatures()[0])
                      if s not in mine]
            # The first SeqPoint stays first (the drift check point); the others go among the
            # signatures of their own length, so a change of speed within a worker reaches a
            # SeqPoint and the shapes it stands for alike (placed first, DeepSpeech2 tiny's
            # SeqPoints read 0.5-1.5% cheaper than the steady truth; in this order +0.2%).
            order = [order[0], *sorted([*order[1:], *others], key=_signature_of)]
        measured = self.measure(order)
        self._warn_compile(measured)
        is_point = [isinstance(item, SeqPoint) for item in order]
        by_iteration = {m.iteration: m for m, point in zip(measured.measurements, is_point, strict=True) if point}
        ms = dataclasses.replace(measured, measurements=tuple(by_iteration[p.iteration] for p in seqpoints.points))
        if every_signature:
            self.others = dataclasses.replace(measured, measurements=tuple(
                m for m, point in zip(measured.measurements, is_point, strict=True) if not point))
        if self.config.profile.window_steps:
            ms = self.with_window(ms)
        if self.folder is not None:
            write_measurements(ms, self.folder.file(f"measurements{self._suffix}.json"))
        self.measurements = ms
        return ms

    def with_window(self, measurements: Measurements) -> Measurements:
        """``measurements`` with the run's first ``[profile] cold_window`` steps timed in sequence
        (the cold-step term's ``window`` calibration); a workload that takes a BatchShape steps
        each with the schedule's real lengths."""
        profile, schedule = self.config.profile, self.schedule
        sigs = [tuple(int(v) for v in row) for row in schedule.signature_matrix()[: profile.window_steps]]
        try:
            if why := self._window_refused():
                raise ConfigError(why)
            shapes = batch_shapes(self.workload, schedule, range(len(sigs)))
            window = self.profiler.window(sigs if shapes is None else shapes, start=int(schedule.iteration[0]),
                                          timer=profile.timer)
        except (ConfigError, RuntimeError) as e:  # RuntimeError: a window step failed (out of memory)
            if isinstance(e, ConfigError) and profile.cold_window is not None:
                raise
            warnings.warn(f"No in-sequence window ([profile] cold_window): {str(e).rstrip('.')}. The cold-step term comes from the "
                          "SeqPoints' first steps, and the interval counts no in-run gap.",
                          SeqPointWarning, stacklevel=3)
            return measurements
        return dataclasses.replace(measurements, window=window)

    def _window_refused(self) -> str | None:
        """Why the window cannot time the points' device here: a CUDA workload's points measured in
        tasks, beside this process's CPU stand-in."""
        if self._device().startswith("cuda") and (kind := self.elsewhere):
            return (f"[profile] cold_window: the points are measured in {kind} tasks, and this process holds a CPU "
                    "copy of the workload; set cold_window = 0, or executor = \"local\" to time the window on the GPU.")
        return None

    def project(self, measurements: Measurements | None = None) -> Projection:
        """The whole run projected from the SeqPoints' measurements (``[projection]``)."""
        from seqpoint.projection import project

        sec = self.config.projection
        ms = measurements or self.measurements or self.measure_seqpoints()
        return project(self.schedule, self.seqpoints, ms, method=sec.method, confidence=sec.confidence,
                       context=self.model)

    def under(self, config: RunConfig, *, tag: str) -> Campaign:
        """The same run and SeqPoints measured under ``config``'s workload and profile (checked
        here, so a bad config fails before anything is measured); writes ``config_<tag>.toml``,
        and its measurements ``measurements_<tag>.json``."""
        other = Campaign(config, reporter=self.reporter, executor=self._executor, folder=self.folder,
                         schedule=self._given, subset=self._subset, tag=tag)
        other._writes_run = False
        other.__dict__.update(_run=self._run, seqpoints=self.seqpoints, model=self.model)
        return other

    # -- what the campaign cost -------------------------------------------------------
    @property
    def reduction(self) -> float:
        """Iterations of the run over training steps executed to profile its SeqPoints."""
        p = self.config.profile
        return reduction_factor(len(self.schedule), len(self.seqpoints), **p.point_steps()._asdict(),
                                overhead=p.protocol_steps() + self.window_steps)

    @property
    def window_steps(self) -> int:
        """Steps the in-sequence window ran (before the points are measured: will run)."""
        ms = self.measurements
        return self.config.profile.window_steps if ms is None else 0 if ms.window is None else len(ms.window.times_s)

    def saving(self, run_s: float = float("nan")) -> ProfilingSaving:
        """The saving in steps, wall clock (against ``run_s``) and tokens (see
        :func:`~seqpoint.validation.profiling_saving`)."""
        assert self.measurements is not None, "measure the SeqPoints first"
        steps = self.config.profile.point_steps()
        metrics = {m.iteration: m.metrics for m in self.measurements.measurements}
        row_of = {int(it): r for r, it in enumerate(self.schedule.iteration.tolist())}
        padded, points = self.schedule.padded_tokens, self.seqpoints.points
        step_s = [metrics.get(p.iteration, {}).get(STEADY_TIME, float("nan")) for p in points]
        first_s = [metrics.get(p.iteration, {}).get(FIRST_STEP_TIME, float("nan")) for p in points]
        tokens = [float(padded[row_of[p.iteration]]) for p in points]
        p, window = self.config.profile, self.measurements.window
        return profiling_saving(padded, tokens, **steps._asdict(), run_s=run_s,
                                overhead=p.protocol_steps() + self.window_steps,
                                overhead_s=0.0 if window is None else sum(window.times_s),
                                point_step_s=step_s if p.stepped else None, point_first_s=first_s if p.stepped else None)

    def _warn_compile(self, measured: Measurements) -> None:
        """Say when a ``torch.compile``d workload's one-off compilations are left out of the projection."""
        timer = self.config.profile.timer
        if not self._declared("compile") or (measured.compile and timer != INSTRUCTIONS):
            return
        why = ("the instructions timer counts steps, not the compilations (collection is off while a worker "
               "starts up); time them with timer = \"wall\"" if timer == INSTRUCTIONS else
               "no point was stepped here (each came from the cache, or ran on another executor, whose workers "
               "do not report it); set [profile] use_cache = false and executor = \"local\"")
        warnings.warn(f"{self.config.workload.name} is compiled (torch.compile), but its compilations are not in "
                      f"the projection: {why}.", SeqPointWarning, stacklevel=3)


def _signature_of(item: SeqPoint | Signature) -> Signature:
    return item.signature if isinstance(item, SeqPoint) else item


def check_data_parallel(cfg: RunConfig, schedule: IterationSchedule) -> None:
    """A data-parallel run is projected with its all-reduce: refuse one without it."""
    sec = cfg.projection
    if schedule.world_size > 1 and sec.interconnect is None and sec.allreduce_s is None:
        raise ConfigError(f"The run is data-parallel ({schedule.world_size} ranks) and its steps end with a "
                          "gradient all-reduce: set [projection] interconnect (e.g. \"nvlink4\", \"ib-200g\", "
                          "\"gloo-loopback\", or bytes per second) or allreduce_s (measured seconds).")


def project_data_parallel(c: Campaign) -> RankProjection | None:
    """The data-parallel projection of ``c`` (slowest rank plus all-reduce per step), or None for
    a single-process run."""
    if c.ranks is None or c.measurements is None:
        return None
    from seqpoint.projection import project_ranks

    sec = c.config.projection
    gradient_bytes = None
    if sec.interconnect is not None:
        if not isinstance(c.workload, CountsParameters):
            raise ConfigError(f"Workload {c.facts.name} does not say its parameter count (n_parameters()), "
                              "so its gradient bytes are unknown; set [projection] allreduce_s instead.")
        gradient_bytes = 4 * int(c.workload.n_parameters())  # gradients stay fp32 under autocast
    return project_ranks(c.ranks, c.seqpoints, c.measurements, allreduce_s=sec.allreduce_s,
                         gradient_bytes=gradient_bytes, interconnect=sec.interconnect, context=c.model)


def check_device_projection(cfg: RunConfig) -> None:
    """A projection onto another device scales measured seconds per operation category:
    refuse a profile that measures neither."""
    if cfg.projection.device is not None and (
            cfg.profile.timer == INSTRUCTIONS or not {"time", "breakdown"} <= cfg.profile.families):
        raise ConfigError(f"[projection] device = {cfg.projection.device!r} scales each SeqPoint's measured seconds "
                          "per operation category: profile with a clock timer (wall or cuda) and [profile] metrics "
                          "that include \"time\" and \"breakdown\".")


def _profiled_device(environment: Mapping[str, Any]) -> str:
    """The device a measurement environment names: ``cpu``, or the shipped GPU whose
    ``cuda_names`` hold its CUDA device's name (ConfigError for a GPU none names)."""
    if environment.get("device_type") != "cuda":
        return "cpu"
    name = str(environment.get("device", ""))
    if (key := gpu_named(name)) is None:
        raise ConfigError(f"The SeqPoints were measured on {name!r}, which no shipped device file names in its "
                          "cuda_names: set [projection] profiled_on to a shipped GPU or to a device file of "
                          "yours (see seqpoint/data/devices/h100.toml).")
    return key


def project_onto_device(c: Campaign) -> DeviceProjection | None:
    """``c``'s run projected onto ``[projection] device`` from the SeqPoints' measured time per
    operation category and the device model's time of each category on the two GPUs (None
    without a device)."""
    sec = c.config.projection
    if sec.device is None or c.measurements is None:
        return None
    from seqpoint.devices import device_key
    from seqpoint.profiling import category_models, device_targets
    from seqpoint.projection import project_device

    source = sec.profiled_on or _profiled_device(c.measurements.environment)
    targets = device_targets(c.workload, [source, sec.device], model=True)
    if source == "cpu":
        warnings.warn(f"The SeqPoints were profiled on a CPU: projecting them onto {sec.device} takes each operation "
                      "category's CPU time at its roofline on this CPU (measured: "
                      f"{targets['cpu'].peak('fp32') / 1e9:.0f} GFLOP/s, {targets['cpu'].bandwidth / 1e9:.0f} GB/s) "
                      "to the device model's time on the GPU, which a CPU rarely matches: profile on a GPU for a "
                      "projection to trust.", SeqPointWarning, stacklevel=2)
    sigs = {m.signature for m in c.measurements.measurements if m.ok}
    modeled = category_models(c.workload, sigs, targets, state=c.profiler.state)
    return project_device(c.schedule, c.seqpoints, c.measurements, modeled, profiled_on=device_key(source),
                          device=device_key(sec.device), method=sec.method, confidence=sec.confidence, context=c.model)
