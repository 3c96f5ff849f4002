"""The stage sequence, composed once: lengths → schedule → workload and cache → SeqPoints →
measurements, each written to the run folder as soon as its stage finishes
(:func:`start_campaign`, or its two halves :func:`plan_campaign` and
:meth:`CampaignPlan.measure`)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from rich.console import Console

from seqpoint.cache import MeasurementCache
from seqpoint.exceptions import ConfigError, SeqPointWarning
from seqpoint.measurements import Measurements, environment_manifest, write_measurements
from seqpoint.measurements._metrics import INSTRUCTIONS
from seqpoint.profiling import profile_points
from seqpoint.projection import DeviceProjection, RankProjection, ScheduleModel
from seqpoint.schedule import IterationSchedule, write_schedule
from seqpoint.selection import SeqPoint, SeqPoints, write_seqpoints
from seqpoint.validation import ProfilingSaving, reduction_factor
from seqpoint.validation._saving import profiling_saving
from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._sections import ProfileSection
from seqpoint.workflows._stages import (
    batch_shapes,
    choose_points,
    make_workload,
    model_cost,
    open_cache,
    run_schedule,
    validation_schedule,
)
from seqpoint.workloads import CountsParameters, Signature, Workload

__all__ = ["Campaign", "CampaignPlan", "check_data_parallel", "check_device_projection", "plan_campaign",
           "project_data_parallel", "project_onto_device", "select_points", "start_campaign", "with_window"]


@dataclass(frozen=True, eq=False)
class _Chosen:
    """What a campaign has before and after its measurements: the run (or the part of it a
    validation executes), its SeqPoints, the configuration measured, its built workload and
    cache (None when ``[profile] use_cache`` is off), and the unit of sequence lengths."""

    config: RunConfig
    folder: RunFolder
    schedule: IterationSchedule
    seqpoints: SeqPoints
    unit: str
    workload: Workload
    cache: MeasurementCache | None
    ranks: IterationSchedule | None
    """A data-parallel run's schedule (``rank`` column); :attr:`schedule` is then its rank
    rows, every rank's batch an iteration of its own, which selection and profiling see."""


@dataclass(frozen=True, eq=False)
class Campaign(_Chosen):
    """SeqPoints of one run measured on one configuration, and where they were written."""

    measurements: Measurements
    """Measurements of :attr:`seqpoints`."""
    others: Measurements | None = None
    """With ``start_campaign(every_signature=True)``: every signature of the schedule that
    no SeqPoint has, timed in the same worker processes as the SeqPoints."""

    @functools.cached_property
    def model(self) -> ScheduleModel:
        """The schedule's projection model, built once for every projection of this run."""
        return ScheduleModel.from_schedule(self.schedule)

    @property
    def reduction(self) -> float:
        """Iterations of the run over training steps executed to profile its SeqPoints."""
        p = self.config.profile
        return reduction_factor(len(self.schedule), len(self.seqpoints), **p.point_steps()._asdict(),
                                overhead=p.protocol_steps() + p.window_steps)

    def saving(self, run_s: float = float("nan")) -> ProfilingSaving:
        """The saving in steps, wall clock (against ``run_s``) and tokens (see
        :func:`~seqpoint.validation._saving.profiling_saving`)."""
        from seqpoint.measurements import STEADY_TIME
        from seqpoint.measurements._metrics import FIRST_STEP_TIME

        steps = self.config.profile.point_steps()
        metrics = {m.iteration: m.metrics for m in self.measurements.measurements}
        row_of = {int(it): r for r, it in enumerate(self.schedule.iteration.tolist())}
        padded, points = self.schedule.padded_tokens, self.seqpoints.points
        step_s = [metrics.get(p.iteration, {}).get(STEADY_TIME, float("nan")) for p in points]
        first_s = [metrics.get(p.iteration, {}).get(FIRST_STEP_TIME, float("nan")) for p in points]
        tokens = [float(padded[row_of[p.iteration]]) for p in points]
        timed = self.config.profile.stepped
        return profiling_saving(padded, tokens, **steps._asdict(), run_s=run_s,
                                point_step_s=step_s if timed else None,
                                point_first_s=first_s if timed else None)

    def measure(
        self, points: SeqPoints | Iterable[SeqPoint] | Iterable[Signature], *,
        progress: bool = False, console: Console | None = None,
    ) -> Measurements:
        """Other points (a baseline's, every signature) on this workload, through the cache."""
        return profile_on(self.config, self.workload, points, cache=self.cache, progress=progress,
                          console=console)


@dataclass(frozen=True, eq=False)
class CampaignPlan(_Chosen):
    """A run's SeqPoints chosen and its workload built, not yet measured
    (:func:`plan_campaign`); :meth:`measure` makes it a :class:`Campaign`, and
    :meth:`under` the same points' plan under another configuration."""

    tag: str = ""
    """Suffix of the per-configuration files."""

    def measure(
        self, *, progress: bool = True, console: Console | None = None,
        between: Callable[[IterationSchedule, int], None] | None = None,
        every_signature: bool = False, end_turn: Callable[[], None] | None = None, label: str | None = None,
    ) -> Campaign:
        """Measure the SeqPoints (``between`` and ``every_signature`` as for
        :func:`start_campaign`; ``end_turn`` is called after each of the protocol's worker
        processes, as :func:`~seqpoint.profiling.take_turns` gives it; ``label`` names the
        campaign in the progress display) and write ``measurements.json``."""
        cfg, schedule, seqpoints = self.config, self.schedule, self.seqpoints
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
        measured = profile_on(cfg, self.workload, order, cache=self.cache, progress=progress,
                              console=console, end_turn=end_turn, label=label,
                              between=None if between is None else functools.partial(between, schedule))
        _warn_compile(self.workload, measured, cfg.profile.timer)
        is_point = [isinstance(item, SeqPoint) for item in order]
        by_iteration = {m.iteration: m for m, point in zip(measured.measurements, is_point, strict=True) if point}
        measurements = replace(measured, measurements=tuple(by_iteration[p.iteration] for p in seqpoints.points))
        others_ms = None
        if every_signature:
            others_ms = replace(measured, measurements=tuple(
                m for m, point in zip(measured.measurements, is_point, strict=True) if not point))
        if cfg.profile.window_steps:
            measurements = with_window(cfg.profile, self.workload, schedule, measurements)
        write_measurements(measurements, self.folder.file(f"measurements{_suffix(self.tag)}.json"))
        chosen = {f.name: getattr(self, f.name) for f in fields(_Chosen)}
        return Campaign(**chosen, measurements=measurements, others=others_ms)

    def under(self, cfg: RunConfig, *, tag: str) -> CampaignPlan:
        """The same schedule and SeqPoints, to be measured under ``cfg``'s workload and
        profile (built here, so a bad config fails before anything is measured); writes
        ``config_<tag>.toml``, and its :meth:`measure` ``measurements_<tag>.json``."""
        self.folder.write_text(f"config_{tag}.toml", cfg.to_toml())
        return replace(self, config=cfg, workload=make_workload(cfg.workload), cache=open_cache(cfg.profile),
                       tag=tag)


def plan_campaign(cfg: RunConfig, folder: RunFolder, *, subset: bool = False, tag: str = "",
                  schedule: IterationSchedule | None = None) -> CampaignPlan:
    """The stages of ``cfg`` up to the SeqPoints, writing ``config.toml``, ``schedule.csv``,
    ``seqpoints.json`` and ``environment.json`` (``subset`` and ``tag`` as for
    :func:`start_campaign`); ``schedule`` (a recorded run's) replaces the config's."""
    folder.write_text(f"config{_suffix(tag)}.toml", cfg.to_toml())
    if schedule is None:
        schedule, unit = run_schedule(cfg)
    else:
        unit = str(schedule.meta.get("unit", "tokens"))
    if subset:
        schedule = validation_schedule(cfg, schedule)
    write_schedule(schedule, folder.file("schedule.csv"))
    ranks = None
    if schedule.rank is not None:
        check_data_parallel(cfg, schedule)  # before anything is measured
        ranks, schedule = schedule, schedule.rank_rows()
    workload = make_workload(cfg.workload)
    cache = open_cache(cfg.profile)
    seqpoints = select_points(cfg, schedule, workload, cache)
    write_seqpoints(seqpoints, folder.file("seqpoints.json"))
    folder.write_json("environment.json", environment_manifest(workload))
    return CampaignPlan(config=cfg, folder=folder, schedule=schedule, seqpoints=seqpoints, unit=unit,
                        workload=workload, cache=cache, ranks=ranks, tag=tag)


def select_points(cfg: RunConfig, schedule: IterationSchedule, workload: Workload,
                  cache: MeasurementCache | None) -> SeqPoints:
    """The SeqPoints of ``[selection]`` on ``schedule``; with ``cost`` ``model`` or
    ``model+pilot``, the model proxy of ``workload`` (timing its pilot through ``cache``)."""
    cost = None
    if cfg.selection.model_proxy:
        # The model proxy needs the workload (and, with a pilot, the harness) first.
        cost = model_cost(cfg.selection, schedule, workload, profile=cfg.profile, cache=cache)
    return choose_points(cfg.selection, schedule, cost=cost)[1]


def start_campaign(
    cfg: RunConfig, folder: RunFolder, *, subset: bool = False, tag: str = "",
    progress: bool = True, console: Console | None = None,
    between: Callable[[IterationSchedule, int], None] | None = None,
    every_signature: bool = False,
) -> Campaign:
    """Run the stages of ``cfg`` up to the SeqPoints' measurements, writing ``folder``'s
    ``config.toml``, ``schedule.csv``, ``seqpoints.json``, ``environment.json`` and
    ``measurements.json`` (``*_<tag>`` with a ``tag``, a speedup's ``a``) as each stage ends.

    ``subset`` keeps the part of the run ``[validation]`` executes in full; ``between(schedule,
    p)`` runs after the protocol's worker process ``p`` of every worker but the last (where
    ``validate`` times its full runs); ``every_signature`` also times every signature no
    SeqPoint has, among them (:attr:`Campaign.others`, ``validate``'s steady-state truth).
    """
    plan = plan_campaign(cfg, folder, subset=subset, tag=tag)
    return plan.measure(progress=progress, console=console, between=between, every_signature=every_signature)


def profile_on(
    cfg: RunConfig, workload: Workload, points: SeqPoints | Iterable[SeqPoint | Signature], *,
    cache: MeasurementCache | None, progress: bool, console: Console | None,
    between: Callable[[int], None] | None = None, end_turn: Callable[[], None] | None = None,
    label: str | None = None,
) -> Measurements:
    """``points`` measured on ``[profile] executor``: here, or on Ray, whose workers build
    ``[workload]`` themselves (nothing runs between them: ``validate`` then times its full
    runs after the campaign)."""
    if cfg.profile.executor == "local":
        return profile_points(workload, points, cfg.profile.harness, cache=cache, progress=progress,
                              console=console, between=between, end_turn=end_turn, label=label)
    from seqpoint.executors import Job, RayExecutor

    job = Job(workload=cfg.workload.name, overrides=dict(cfg.workload.set), config=cfg.profile.harness,
              points=points if isinstance(points, SeqPoints) else list(points))
    with RayExecutor(address=cfg.profile.address) as executor:
        return executor.profile([job], cache=cache, progress=progress, console=console)[0]


def _suffix(tag: str) -> str:
    return f"_{tag}" if tag else ""


def _signature_of(item: SeqPoint | Signature) -> Signature:
    return item.signature if isinstance(item, SeqPoint) else item


def with_window(
    profile: ProfileSection, workload: Workload, schedule: IterationSchedule, measurements: Measurements,
) -> Measurements:
    """``measurements`` with the run's first ``[profile] cold_window`` steps timed in
    sequence (the cold-step term's ``window`` calibration); a workload that takes a
    BatchShape steps each with the schedule's real lengths."""
    from seqpoint.profiling import profile_window

    sigs = [tuple(int(v) for v in row) for row in schedule.signature_matrix()[: profile.cold_window]]
    shapes = batch_shapes(workload, schedule, range(len(sigs)))
    window = profile_window(workload, sigs if shapes is None else shapes, start=int(schedule.iteration[0]),
                            timer=profile.timer)
    return replace(measurements, window=window)


def _warn_compile(workload: Workload, measured: Measurements, timer: str) -> None:
    """Say when a ``torch.compile``d workload's one-off compilations are left out of the projection."""
    if not getattr(getattr(workload, "config", None), "compile", False) or (measured.compile and timer != INSTRUCTIONS):
        return
    why = ("the instructions timer counts steps, not the compilations (collection is off while a worker "
           "starts up); time them with timer = \"wall\"" if timer == INSTRUCTIONS else
           "no point was stepped here (each came from the cache, or ran on Ray, whose workers do not report "
           "it); set [profile] use_cache = false and executor = \"local\"")
    warnings.warn(f"{workload.name} is compiled (torch.compile), but its compilations are not in the projection: "
                  f"{why}.", SeqPointWarning, stacklevel=3)


def check_data_parallel(cfg: RunConfig, schedule: IterationSchedule) -> None:
    """A data-parallel run is projected with its all-reduce: refuse one without it."""
    sec = cfg.projection
    if schedule.world_size > 1 and sec.interconnect is None and sec.allreduce_s is None:
        raise ConfigError(f"The run is data-parallel ({schedule.world_size} ranks) and its steps end with a "
                          "gradient all-reduce: set [projection] interconnect (e.g. \"nvlink4\", \"ib-200g\", "
                          "\"gloo-loopback\", or bytes per second) or allreduce_s (measured seconds).")


def project_data_parallel(c: Campaign) -> RankProjection | None:
    """The data-parallel projection of ``c`` (slowest rank plus all-reduce per step), or
    None for a single-process run."""
    if c.ranks is None:
        return None
    from seqpoint.projection import project_ranks

    sec = c.config.projection
    gradient_bytes = None
    if sec.interconnect is not None:
        if not isinstance(c.workload, CountsParameters):
            raise ConfigError(f"Workload {c.workload.name} does not say its parameter count (n_parameters()), "
                              "so its gradient bytes are unknown; set [projection] allreduce_s instead.")
        gradient_bytes = 4 * int(c.workload.n_parameters())  # gradients stay fp32 under autocast
    return project_ranks(c.ranks, c.seqpoints, c.measurements, allreduce_s=sec.allreduce_s,
                         gradient_bytes=gradient_bytes, interconnect=sec.interconnect,
                         context=c.model)


def check_device_projection(cfg: RunConfig) -> None:
    """A projection onto another device scales measured seconds per operation category:
    refuse a profile that measures neither."""
    if cfg.projection.device is not None and (
            cfg.profile.timer == INSTRUCTIONS or not {"time", "breakdown"} <= cfg.profile.families):
        raise ConfigError(f"[projection] device = {cfg.projection.device!r} scales each SeqPoint's measured seconds "
                          "per operation category: profile with a clock timer (wall or cuda) and [profile] metrics "
                          "that include \"time\" and \"breakdown\".")


def profiled_device(environment: Mapping[str, Any]) -> str:
    """The device a measurement environment names: ``cpu``, or the shipped GPU whose
    ``cuda_names`` hold its CUDA device's name (ConfigError for a GPU none names)."""
    from seqpoint.devices import gpu_named

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
    if sec.device is None:
        return None
    from seqpoint.devices import device_key
    from seqpoint.profiling import category_models, device_targets
    from seqpoint.projection import project_device

    source = sec.profiled_on or profiled_device(c.measurements.environment)
    targets = device_targets(c.workload, [source, sec.device], model=True)
    if source == "cpu":
        warnings.warn(f"The SeqPoints were profiled on a CPU: projecting them onto {sec.device} takes each operation "
                      "category's CPU time at its roofline on this CPU (measured: "
                      f"{targets['cpu'].peak('fp32') / 1e9:.0f} GFLOP/s, {targets['cpu'].bandwidth / 1e9:.0f} GB/s) "
                      "to the device model's time on the GPU, which a CPU rarely matches: profile on a GPU for a "
                      "projection to trust.", SeqPointWarning, stacklevel=2)
    sigs = {m.signature for m in c.measurements.measurements if m.ok}
    modeled = category_models(c.workload, sigs, targets)
    return project_device(c.schedule, c.seqpoints, c.measurements, modeled, profiled_on=device_key(source),
                          device=device_key(sec.device), method=sec.method, confidence=sec.confidence, context=c.model)
