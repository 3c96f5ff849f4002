"""The sections of a run config, each checked when it is built (so when the TOML is loaded):
scalars by :mod:`seqpoint._params`, parameter tables by building the component they
configure, so a bad value fails at load with its section named, not minutes later."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

from seqpoint._jsonio import MAX_LENGTH
from seqpoint._params import (
    Boolean,
    Constraint,
    Interval,
    Options,
    Predicate,
    TypeOf,
    bounded,
    check_params,
)
from seqpoint.devices import GPU_SPECS, resolve_device
from seqpoint.exceptions import ConfigError
from seqpoint.executors import EXECUTORS
from seqpoint.measurements.metrics import INSTRUCTIONS
from seqpoint.profiling import ProfileConfig
from seqpoint.traces import FORMATS

__all__ = ["BatchingSection", "LengthsSection", "ProfileSection", "ProjectionSection", "ReportSection",
           "SelectionSection", "ValidationSection", "WorkloadSection"]

_STR = TypeOf(str, "a str")
_BOOL = Boolean("true or false")
_TABLE = TypeOf(dict, "a table")
#: Proxies that are the profiled model's own cost, not a formula of the signature.
MODEL_PROXIES = ("model", "model+pilot")
#: Steps of the in-sequence window when ``[profile] cold_window`` is unset (users' jobs: issue 45 item 5).
DEFAULT_COLD_WINDOW = 10
#: Selectors that group iterations on a cost proxy.
_PROXY_METHODS = ("seqpoint", "stratified")
#: Most epochs a run replays or validates: beyond, the replay would run for hours.
_EPOCHS = bounded(int, 1, 10_000)
_PATH = Predicate(lambda v: isinstance(v, str) and v != "" and "\x00" not in v, "a non-empty path without NUL characters")
#: A device: ``cpu`` (this machine, measured), a shipped GPU or a device file.
_DEVICE = Predicate(lambda v: isinstance(v, str) and (v in ("cpu", *GPU_SPECS) or v.endswith(".toml")),
                    f"one of 'cpu', {', '.join(map(repr, GPU_SPECS))} or a device file (a path ending .toml)")


@contextmanager
def named(where: str) -> Iterator[None]:
    """Prefix ``where`` to a ConfigError that does not name it yet, so the user knows where to look."""
    try:
        yield
    except ConfigError as exc:
        text = str(exc)
        raise ConfigError(text if where in text else f"{where}: {text}") from None


def in_section(section: str) -> AbstractContextManager[None]:
    """Name ``[section]`` in a component's own error."""
    return named(f"[{section}]")


def _check(section: str, obj: object, constraints: dict[str, list[Constraint]]) -> None:
    check_params(f"[{section}]", constraints, {k: getattr(obj, k) for k in constraints})


def _read_device_file(section: str, device: str | None) -> None:
    """Read and check a device file named in ``[section]`` (a shipped key is known already)."""
    if device is not None and device.endswith(".toml"):
        with in_section(section):
            resolve_device(device)


@dataclass(frozen=True, kw_only=True)
class LengthsSection:
    """Where per-sample lengths come from."""

    source: str | None = None
    """A file path, or ``bundled:NAME`` (required unless ``[batching] schedule`` names the run)."""
    format: str | None = None
    """``csv``, ``jsonl``, ``text``, ``parallel`` or ``histogram``; inferred when unset."""
    column: str | None = None
    """CSV column holding lengths."""
    tgt: str | None = None
    """Target-side file for parallel text."""
    params: dict[str, Any] = field(default_factory=dict)
    """Further reader parameters (e.g. ``scale``, ``frames_per_second``)."""
    max_samples: int | None = None
    """Use only the first N samples (after a seeded shuffle), for a smaller run."""
    seed: int = 0
    """Seed of the shuffle that picks ``max_samples``."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "source": [_STR, None], "format": [Options(FORMATS, quote=False), None], "column": [_STR, None],
        "tgt": [_STR, None], "params": [_TABLE], "max_samples": [Interval(int, 1), None], "seed": [Interval(int, 0)]}

    def __post_init__(self) -> None:
        _check("lengths", self, self._parameter_constraints)


@dataclass(frozen=True, kw_only=True)
class BatchingSection:
    """How the data pipeline cuts batches."""

    policy: str = "sortagrad"
    """Batching policy name (``seqpoint schedule --help`` lists them)."""
    epochs: int = 1
    """Epochs replayed."""
    seed: int = 0
    """Seed of every shuffle."""
    params: dict[str, Any] = field(default_factory=dict)
    """Policy parameters (``batch_size``, ``max_tokens``, ``num_buckets``, ...)."""
    schedule: str | None = None
    """A schedule file or a run trace to use as the run, in place of replaying ``policy``."""
    world_size: int = 1
    """Data-parallel ranks: the schedule holds every rank's batch of every step."""
    rank: int | None = None
    """Keep only this rank's rows (0..world_size-1); None keeps every rank."""
    shard: str | None = None
    """How ranks split an epoch: 'samples' (DistributedSampler) or 'batches' (round-robin);
    None: the policy's default."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "policy": [_STR], "epochs": [_EPOCHS], "seed": [Interval(int, 0)], "params": [_TABLE],
        "schedule": [_STR, None], "world_size": [bounded(int, 1, 1 << 16)], "rank": [Interval(int, 0), None],
        "shard": [_STR, None]}

    def __post_init__(self) -> None:
        _check("batching", self, self._parameter_constraints)
        from seqpoint.batching import make_policy, resolve_shard

        if self.rank is not None and self.rank >= self.world_size:
            raise ConfigError(f"[batching]: rank = {self.rank} is not below world_size = {self.world_size}; "
                              f"give a rank in 0..{self.world_size - 1}.")
        with in_section("batching"):
            make_policy(self.policy, **self.params)
            if self.shard is not None:
                resolve_shard(self.policy, self.shard)


@dataclass(frozen=True, kw_only=True)
class SelectionSection:
    """How SeqPoints are chosen."""

    method: str = "seqpoint"
    """Selector name."""
    n_points: int | None = 10
    """Number of SeqPoints k (unset when ``max_error`` is used)."""
    max_error: float | None = None
    """Smallest k whose estimated error is below this fraction."""
    seed: int = 0
    """Seed of stochastic selectors."""
    params: dict[str, Any] = field(default_factory=dict)
    """Further selector parameters (``grouping``, ...)."""
    proxy: str = "auto"
    """The cost proxy iterations are grouped on (``seqpoint``, ``stratified``): a formula of the
    signature (``attention``, ``tokens``, ``quadratic``, ``seq_len``), or for ``seqpoint`` ``model``
    (the roofline time per signature on ``proxy_device``) or ``model+pilot`` (that, rescaled by
    ``pilot_points`` measured steps); ``auto``: ``attention``, plus exact FLOPs and bytes for
    ``seqpoint`` on a built-in workload."""
    proxy_device: str | None = None
    """Roofline device of the model proxy: ``cpu``, a shipped GPU (``GPU_SPECS``) or a device file;
    default the device the workload runs on."""
    pilot_points: int = 5
    """Signatures timed for ``model+pilot``, spread over the range of the model cost."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "proxy": [_STR], "proxy_device": [_DEVICE, None], "pilot_points": [Interval(int, 2, 50)], "method": [_STR],
        "max_error": [Interval(float, 0, 1, closed="neither", word="a fraction"), None], "seed": [Interval(int, 0)],
        "params": [_TABLE]}

    @property
    def model_proxy(self) -> bool:
        """Whether the proxy needs the profiled model (``model``, ``model+pilot``; ``auto``
        with the ``seqpoint`` method)."""
        return self.proxy in MODEL_PROXIES or (self.proxy == "auto" and self.method == "seqpoint")

    def __post_init__(self) -> None:
        _check("selection", self, self._parameter_constraints)
        _read_device_file("selection", self.proxy_device)
        from seqpoint.selection import COST_MODELS

        if self.proxy not in COST_MODELS and self.proxy not in ("auto", *MODEL_PROXIES):
            raise ConfigError(f"[selection] proxy = {self.proxy!r} is not a cost proxy; use one of "
                              f"{', '.join([*COST_MODELS.names(), *MODEL_PROXIES, 'auto'])}.")
        takes = ("seqpoint",) if self.proxy in MODEL_PROXIES else _PROXY_METHODS
        if self.proxy not in ("attention", "auto") and self.method not in takes:
            raise ConfigError(f"[selection] proxy = {self.proxy!r} needs method = {' or '.join(map(repr, takes))} "
                              f"(got {self.method!r}); leave proxy out for other methods.")
        if self.max_error is not None:
            # max_error decides k; a leftover n_points (e.g. the default) is dropped.
            object.__setattr__(self, "n_points", None)
        else:
            check_params("[selection]", {"n_points": [Interval(int, 1)]}, {"n_points": self.n_points})
        with in_section("selection"):
            self.selector_params(self.method)  # builds the selector: names and parameters

    def selector_params(self, method: str | None = None, n_points: int | None = None) -> dict[str, Any]:
        """Keyword parameters of ``method`` (default: this section's) at ``n_points``; a baseline
        (another method) gets the seed and ``n_points`` only, ``params`` being this method's."""
        from seqpoint.selection import make_selector

        name = method or self.method
        params: dict[str, Any] = {"random_state": self.seed}
        if name == self.method:
            params.update(self.params)
            if name in _PROXY_METHODS and not self.model_proxy:
                params["cost"] = "attention" if self.proxy == "auto" else self.proxy
        if n_points is not None:
            params["n_points"] = n_points
        elif self.max_error is not None:
            if name != "seqpoint":
                raise ConfigError(f"max_error selects k for the 'seqpoint' method only; give n_points for {name!r}.")
            params["max_error"] = self.max_error
        else:
            params["n_points"] = self.n_points
        make_selector(name, **params)  # unknown names and parameters fail here
        return params


@dataclass(frozen=True, kw_only=True)
class WorkloadSection:
    """The model whose training step is profiled."""

    name: str = "deepspeech2:tiny"
    """``name[:preset]`` of a reference workload, or ``module:function``."""
    set: dict[str, Any] = field(default_factory=dict)
    """Overrides of the workload's config fields (``threads``, ``dtype``, ...)."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {"name": [_STR], "set": [_TABLE]}

    def __post_init__(self) -> None:
        _check("workload", self, self._parameter_constraints)
        from seqpoint.workloads import WORKLOADS, workload_config

        with in_section("workload"):
            # A user's module:function is imported only when the run builds it.
            if ":" not in self.name:
                WORKLOADS.get(self.name)  # an unknown name lists the valid ones
            workload_config(self.name, self.set)

    @classmethod
    def given(cls, name: str) -> WorkloadSection:
        """The section of a workload given built (``project_job``'s): its name is the workload's
        own, looked up in no registry (a duck-typed workload's may be any word)."""
        section = object.__new__(cls)
        object.__setattr__(section, "name", name)
        object.__setattr__(section, "set", {})
        return section


@dataclass(frozen=True, kw_only=True)
class ProfileSection(ProfileConfig):
    """How each SeqPoint is measured: the harness's :class:`~seqpoint.profiling.ProfileConfig`
    (same fields and checks) plus where the measurements are cached."""

    metrics: tuple[str, ...] = ("time", "flops", "breakdown", "memory")
    """Metrics to record (more than ``seqpoint profile``'s ``time``: the report shows them)."""
    cache: str | None = None
    """Cache file; default ``$SEQPOINT_CACHE`` or ``~/.cache/seqpoint/measurements.sqlite``."""
    use_cache: bool = True
    """Read and write the measurement cache."""
    cold_window: int | None = None
    """Time the run's first ``cold_window`` iterations in sequence in a fresh process (costs that
    many steps): they calibrate the cold-step term, and their warm steps against the isolated
    SeqPoints (the in-run gap) widen the interval. 0: the cold term from the SeqPoints' first
    steps, no gap counted. Unset: ``DEFAULT_COLD_WINDOW`` steps when time is measured in seconds
    (skipped, with a warning, where the workload cannot go to a fresh process)."""
    executor: str = "local"
    """Where the SeqPoints are measured: ``local``, ``ray`` or ``submitit`` (Slurm jobs, local
    subprocesses without Slurm); this process alone uses the cache."""
    address: str | None = None
    """With ``executor = "ray"``: the cluster (``host:port``, ``ray://host:port``, ``auto``);
    unset starts (or joins) a local Ray."""

    def __post_init__(self) -> None:
        with in_section("profile"):
            super().__post_init__()  # the harness's fields, by ProfileConfig's _parameter_constraints
        _check("profile", self, {"cache": [_PATH, None], "use_cache": [_BOOL], "cold_window": [bounded(int, 0, 100_000), None],
                                 "executor": [Options(EXECUTORS)], "address": [_STR, None]})
        if self.cold_window and self.timer == INSTRUCTIONS:
            raise ConfigError("[profile]: cold_window times steps in seconds; with timer = \"instructions\" the "
                              "cold-step term comes from the points' first steps: set cold_window = 0.")
        if self.address is not None and self.executor != "ray":
            raise ConfigError('[profile]: address is the Ray cluster\'s; set executor = "ray" too.')

    @property
    def window_steps(self) -> int:
        """Steps the cold-step window runs: ``cold_window`` (unset: ``DEFAULT_COLD_WINDOW`` with a
        clock timer) when time is measured, else 0."""
        if "time" not in self.families:
            return 0
        if self.cold_window is None:
            return 0 if self.timer == INSTRUCTIONS else DEFAULT_COLD_WINDOW
        return self.cold_window

    @property
    def harness(self) -> ProfileConfig:
        """The harness config alone: the cache settings are not part of a measurement's key."""
        return ProfileConfig(**{f.name: getattr(self, f.name) for f in dataclasses.fields(ProfileConfig)})


@dataclass(frozen=True, kw_only=True)
class ProjectionSection:
    """How the measurements become the whole run's totals."""

    method: str = "weighted"
    """``weighted`` (the SeqPoint paper's ``Σ weight · value``) or ``interpolated``."""
    confidence: float = 0.95
    """Confidence level of the interval's noise part."""
    interconnect: str | float | None = None
    """Data-parallel runs: the link the gradient all-reduce crosses, a name of
    ``seqpoint.projection.INTERCONNECTS`` (pcie4, nvlink4, ...) or bytes per second."""
    allreduce_s: float | None = None
    """Data-parallel runs: a measured all-reduce, seconds per step (in place of ``interconnect``)."""
    device: str | None = None
    """Also project the run onto this GPU (shipped or a device file): each SeqPoint's time per
    operation category scaled by the device model (``seqpoint.projection.project_device``)."""
    profiled_on: str | None = None
    """The device the SeqPoints are profiled on, for ``device``: ``cpu``, a shipped GPU or a
    device file (unset: the GPU the measurements name, by the device files' ``cuda_names``)."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "method": [Options(("weighted", "interpolated"))],
        "confidence": [Interval(float, 0, 1, closed="neither", word="a number")],
        "interconnect": [_STR, Interval(float, 0, None, closed="neither", word="a number"), None],
        "allreduce_s": [Interval(float, 0, None), None], "device": [_DEVICE, None], "profiled_on": [_DEVICE, None]}

    def __post_init__(self) -> None:
        _check("projection", self, self._parameter_constraints)
        if self.device == "cpu":
            raise ConfigError("[projection] device = \"cpu\": project onto a GPU (a shipped one: "
                              f"{', '.join(GPU_SPECS)}; or a device file, a path ending .toml).")
        if self.profiled_on is not None and self.device is None:
            raise ConfigError("[projection] profiled_on names the device of the SeqPoints for a projection onto "
                              "another one: set device too (e.g. device = \"h200\"), or leave profiled_on out.")
        for d in (self.device, self.profiled_on):
            _read_device_file("projection", d)
        if self.interconnect is not None and self.allreduce_s is not None:
            raise ConfigError("[projection]: give either interconnect or allreduce_s (a measured all-reduce), "
                              "not both.")
        if isinstance(self.interconnect, str):
            from seqpoint.projection import INTERCONNECTS

            if self.interconnect not in INTERCONNECTS:
                raise ConfigError(f"[projection]: unknown interconnect {self.interconnect!r}; use one of "
                                  f"{', '.join(INTERCONNECTS)} or a bandwidth in bytes per second.")


@dataclass(frozen=True, kw_only=True)
class ValidationSection:
    """Ground truth: which part of the run is executed in full, and how often."""

    epochs: int | None = None
    """Validate on the first E epochs only (unset: all)."""
    max_iterations: int | None = None
    """Validate on at most this many leading iterations (unset: all)."""
    runs: int = 2
    """Identical full runs; two or more give the noise floor."""
    baselines: tuple[str, ...] = ("first", "random", "stride", "mean", "median", "simpoint", "stratified")
    """Baselines compared with SeqPoints at the same profiling budget."""
    steady_truth: bool = True
    """Also time every unique signature, among the SeqPoints, to split the error into the
    selection error and the in-sequence overhead that isolated profiling cannot see."""
    between_workers: bool = True
    """With ``[profile] processes > 1``, time the full runs between the protocol's worker
    processes (P F P F P), so truth and projection meet the same machine speed; false: after them."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "epochs": [_EPOCHS, None], "max_iterations": [Interval(int, 1, MAX_LENGTH), None],
        "runs": [bounded(int, 1, 1000)], "baselines": [TypeOf((tuple, list), "a list of names")],
        "steady_truth": [_BOOL], "between_workers": [_BOOL]}

    def __post_init__(self) -> None:
        _check("validation", self, self._parameter_constraints)
        object.__setattr__(self, "baselines", tuple(self.baselines))
        from seqpoint.selection import SELECTORS

        with in_section("validation"):
            for name in self.baselines:
                SELECTORS.get(name)  # unknown names list the valid ones


@dataclass(frozen=True, kw_only=True)
class ReportSection:
    """What a run writes."""

    out: str | None = None
    """Run folder; default ``runs/<name>-<timestamp>``."""
    plots: bool = True
    """Write PNG plots."""
    html: bool = True
    """Write ``report.html``."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {"out": [_PATH, None], "plots": [_BOOL],
                                                                      "html": [_BOOL]}

    def __post_init__(self) -> None:
        _check("report", self, self._parameter_constraints)
