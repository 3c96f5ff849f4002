"""The run configuration: one TOML file of nested, frozen, keyword-only sections.

Each section names a component and forwards its parameters to that component's own
config (``make_policy``, ``make_selector``, ``load_workload``, ``ProfileConfig``), which
validates them. CLI flags override TOML values through :func:`apply_overrides`.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqpoint._config import from_dict
from seqpoint.exceptions import ConfigError

__all__ = [
    "BatchingSection",
    "LengthsSection",
    "ProfileSection",
    "ReportSection",
    "RunConfig",
    "SelectionSection",
    "ValidationSection",
    "WorkloadSection",
    "apply_overrides",
    "load_config",
]


def _positive(owner: str, name: str, value: int | None, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"The {name!r} parameter of [{owner}] must be an int >= 1. Got {value!r}.")


@dataclass(frozen=True, kw_only=True)
class LengthsSection:
    """Where per-sample lengths come from."""

    source: str = "bundled:librispeech-train-clean-100"
    """A file path, or ``bundled:NAME`` for data shipped with seqpoint."""
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
    subset_seed: int = 0
    """Seed of the shuffle that picks ``max_samples``."""

    def __post_init__(self) -> None:
        _positive("lengths", "max_samples", self.max_samples, allow_none=True)


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

    def __post_init__(self) -> None:
        _positive("batching", "epochs", self.epochs)


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
    """Further selector parameters."""

    def __post_init__(self) -> None:
        if self.max_error is not None:
            if not (isinstance(self.max_error, int | float) and 0 < self.max_error < 1):
                raise ConfigError(
                    f"The 'max_error' parameter of [selection] must be a fraction in (0, 1). "
                    f"Got {self.max_error!r}."
                )
            # max_error decides k; a leftover n_points (e.g. the default) is dropped.
            object.__setattr__(self, "n_points", None)
        else:
            _positive("selection", "n_points", self.n_points)


@dataclass(frozen=True, kw_only=True)
class WorkloadSection:
    """The model whose training step is profiled."""

    name: str = "deepspeech2:tiny"
    """``name[:preset]`` of a reference workload, or ``module:function``."""
    set: dict[str, Any] = field(default_factory=dict)
    """Overrides of the workload's config fields (``threads``, ``dtype``, ...)."""


@dataclass(frozen=True, kw_only=True)
class ProfileSection:
    """How each SeqPoint is measured."""

    warmup: int = 2
    """Untimed iterations before the timed ones."""
    repeats: int = 5
    """Timed iterations per point."""
    timer: str = "wall"
    """``wall``, ``cpu`` or ``cuda``."""
    metrics: tuple[str, ...] = ("time", "flops", "breakdown", "memory")
    """Metrics to record."""
    cache: str | None = None
    """Cache file; default ``$SEQPOINT_CACHE`` or ``~/.cache/seqpoint/measurements.sqlite``."""
    use_cache: bool = True
    """Read and write the measurement cache."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", tuple(self.metrics))
        _positive("profile", "repeats", self.repeats)
        if not isinstance(self.warmup, int) or self.warmup < 0:
            raise ConfigError(f"The 'warmup' parameter of [profile] must be an int >= 0. Got {self.warmup!r}.")


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
    """Also profile every unique signature in isolation, to split the error into the
    selection error and the in-sequence overhead that isolated profiling cannot see."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "baselines", tuple(self.baselines))
        _positive("validation", "epochs", self.epochs, allow_none=True)
        _positive("validation", "max_iterations", self.max_iterations, allow_none=True)
        _positive("validation", "runs", self.runs)


@dataclass(frozen=True, kw_only=True)
class ReportSection:
    """What a run writes."""

    out: str | None = None
    """Run folder; default ``runs/<name>-<timestamp>``."""
    plots: bool = True
    """Write PNG plots."""
    html: bool = True
    """Write ``report.html``."""


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """A whole seqpoint run, from lengths to report."""

    name: str = "run"
    """Short name used for the run folder."""
    lengths: LengthsSection = field(default_factory=LengthsSection)
    """[lengths]"""
    batching: BatchingSection = field(default_factory=BatchingSection)
    """[batching]"""
    selection: SelectionSection = field(default_factory=SelectionSection)
    """[selection]"""
    workload: WorkloadSection = field(default_factory=WorkloadSection)
    """[workload]"""
    profile: ProfileSection = field(default_factory=ProfileSection)
    """[profile]"""
    validation: ValidationSection = field(default_factory=ValidationSection)
    """[validation]"""
    report: ReportSection = field(default_factory=ReportSection)
    """[report]"""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_toml(self) -> str:
        """The resolved config as TOML (what a run folder stores)."""
        return _dump_toml(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, where: str = "config") -> RunConfig:
        sections = {f.name: f.type for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key not in sections:
                raise ConfigError(
                    f"Unknown key {key!r} in {where}. Valid keys: {', '.join(sections)}."
                )
            if key == "name":
                kwargs[key] = str(value)
                continue
            if not isinstance(value, dict):
                raise ConfigError(f"[{key}] in {where} must be a table, got {value!r}.")
            kwargs[key] = from_dict(_SECTION_TYPES[key], value, where=f"[{key}] of {where}")
        return cls(**kwargs)


_SECTION_TYPES: dict[str, type] = {
    "lengths": LengthsSection,
    "batching": BatchingSection,
    "selection": SelectionSection,
    "workload": WorkloadSection,
    "profile": ProfileSection,
    "validation": ValidationSection,
    "report": ReportSection,
}


def load_config(path: str | Path) -> RunConfig:
    """Read a run config TOML; errors name the file, the line or key, and the fix."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"Config file {path} does not exist; see configs/ for examples.")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}.") from None
    return RunConfig.from_dict(data, where=str(path))


def apply_overrides(cfg: RunConfig, overrides: list[str]) -> RunConfig:
    """Apply ``section.key=value`` overrides (values parsed as TOML, else kept as strings)."""
    data = cfg.to_dict()
    for item in overrides:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise ConfigError(
                f"Override {item!r} must look like section.key=value (e.g. batching.epochs=2)."
            )
        dotted, raw = item.split("=", 1)
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        node = data
        *parents, leaf = dotted.strip().split(".")
        for p in parents:
            if p not in node or not isinstance(node[p], dict):
                raise ConfigError(
                    f"Override {item!r}: {p!r} is not a section. Valid sections: "
                    f"{', '.join(k for k, v in data.items() if isinstance(v, dict))}."
                )
            node = node[p]
        node[leaf] = value
    return RunConfig.from_dict(data, where="overrides")


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_key(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else f'"{k}"'


def _dump_toml(data: dict[str, Any]) -> str:
    """Minimal TOML writer for our config shape (scalars, lists, one level of tables)."""
    lines: list[str] = []
    for k, v in data.items():
        if not isinstance(v, dict) and v is not None:
            lines.append(f"{_key(k)} = {_toml_value(v)}")
    for k, v in data.items():
        if isinstance(v, dict):
            lines.append(f"\n[{k}]")
            for kk, vv in v.items():
                if vv is not None:
                    lines.append(f"{_key(kk)} = {_toml_value(vv)}")
    return "\n".join(lines) + "\n"
