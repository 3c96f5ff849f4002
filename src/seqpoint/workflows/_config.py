"""The run configuration: one TOML file of nested, frozen, keyword-only sections, which
``--set section.key=value`` overrides (:func:`apply_overrides`)."""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

import seqpoint.workflows._sections as sections
from seqpoint._config import from_dict, parse_set
from seqpoint._jsonio import read_text
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.workflows._sections import in_section, named

__all__ = ["RunConfig", "apply_overrides", "flat_keys", "load_config"]


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """A whole seqpoint run, from lengths to report."""

    name: str = "run"
    """Short name used for the run folder."""
    lengths: sections.LengthsSection = field(default_factory=sections.LengthsSection)
    """[lengths]"""
    batching: sections.BatchingSection = field(default_factory=sections.BatchingSection)
    """[batching]"""
    selection: sections.SelectionSection = field(default_factory=sections.SelectionSection)
    """[selection]"""
    workload: sections.WorkloadSection = field(default_factory=sections.WorkloadSection)
    """[workload]"""
    profile: sections.ProfileSection = field(default_factory=sections.ProfileSection)
    """[profile]"""
    projection: sections.ProjectionSection = field(default_factory=sections.ProjectionSection)
    """[projection]"""
    validation: sections.ValidationSection = field(default_factory=sections.ValidationSection)
    """[validation]"""
    report: sections.ReportSection = field(default_factory=sections.ReportSection)
    """[report]"""

    def __post_init__(self) -> None:
        from seqpoint.clocks import check_timer
        from seqpoint.workloads import workload_config

        # A registered workload's device is known now: a timer that cannot time it is refused
        # before anything runs (a user workload's, once it is built).
        declared = workload_config(self.workload.name, self.workload.set)
        if declared is not None and "time" in self.profile.families:
            check_timer(self.profile.timer, declared.device, workload=self.workload.name)

    def describe_run(self) -> str:
        """Where the run's batches come from, for headings: ``source · policy``, or the file."""
        if self.batching.schedule is not None:
            return f"schedule {self.batching.schedule}"
        return f"{self.lengths.source} · {self.batching.policy}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data: one dict per section."""
        return dataclasses.asdict(self)

    def to_toml(self) -> str:
        """The resolved config as TOML (what a run folder stores)."""
        return _dump_toml(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, where: str = "config") -> RunConfig:
        """Build from parsed TOML; an error names ``where`` (the file) and the section."""
        sections = get_type_hints(cls)  # the section classes, by field name
        if old := next((k for k in flat_keys(data) if k in _RENAMED), None):
            raise ConfigError(f"{where}: {_in_toml(old)} is now {_in_toml(_RENAMED[old])}; use the new name.")
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key not in sections:
                raise ConfigError(f"Unknown key {key!r} in {where}. Valid keys: {', '.join(sections)}.")
            if key == "name":
                if not isinstance(value, str) or not value or "\x00" in value:
                    raise ConfigError(f"The 'name' of {where} must be a non-empty string without NUL "
                                      f"characters. Got {value!r}.")
                kwargs[key] = value
                continue
            if not isinstance(value, dict):
                raise ConfigError(f"[{key}] in {where} must be a table, got {value!r}.")
            with named(where), in_section(key):
                kwargs[key] = from_dict(sections[key], value, where=f"[{key}] of {where}")
        return cls(**kwargs)


#: Keys renamed or moved, old to new (``section.key``): an old one is refused with its new name.
_RENAMED = {"batching.interconnect": "projection.interconnect", "batching.allreduce_s": "projection.allreduce_s",
            "lengths.subset_seed": "lengths.seed", "selection.cost": "selection.proxy",
            "selection.params.cost": "selection.proxy", "selection.cost_device": "selection.proxy_device",
            "validation.interleave": "validation.between_workers"}


def _in_toml(dotted: str) -> str:
    section, _, key = dotted.partition(".")
    return f"[{section}] {key}"


def read_toml(path: str | Path, *, what: str = "Config file", examples: str = "configs/") -> dict[str, Any]:
    """Parse a TOML file (UTF-8, not nested absurdly); every failure is one ``ConfigError`` line."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{what} {path} does not exist; see {examples} for examples.")
    try:
        text = read_text(path, what=what, made_by=f"an editor; see {examples} for examples")
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {' '.join(str(exc).split())}.") from None
    except RecursionError:
        raise ConfigError(f"{path}: TOML nested too deeply; this is not a {what.lower()}.") from None


def load_config(path: str | Path) -> RunConfig:
    """Read a run config TOML; errors name the file, the line or key, and the fix. An empty
    file is refused: taken as all defaults, it would run a job nobody asked for."""
    data = read_toml(path)
    if not data:
        raise ConfigError(f"{path} is empty: a run config names at least its lengths ([lengths] source) or "
                          "schedule ([batching] schedule) and its workload ([workload] name); configs/ has examples.")
    return RunConfig.from_dict(data, where=str(path))


def apply_overrides(cfg: RunConfig, overrides: list[str], *, option: str = "--set") -> RunConfig:
    """Apply ``section.key=value`` overrides (the ``--set`` grammar: TOML values, bare words
    as strings); ``workload.set.dtype=bf16`` reaches into a section's table. ``option`` is
    the flag the overrides came from, as errors name it."""
    values: dict[str, object] = {}
    for item in overrides:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise ConfigError(f"Override {item!r} ({option}) must look like section.key=value "
                              "(e.g. batching.epochs=2).")
        values.update(parse_set([item], option=option))
    return set_keys(cfg, values, where=f"{option} overrides")


def set_keys(cfg: RunConfig, values: dict[str, object], *, where: str) -> RunConfig:
    """``cfg`` with dotted ``section.key`` values set, rebuilt and so checked; ``where``
    names the source in errors (the flag, or a sweep's configuration)."""
    data = cfg.to_dict()
    valid = ", ".join(k for k, v in data.items() if isinstance(v, dict))
    for dotted, value in values.items():
        *parents, leaf = dotted.split(".")
        if not parents:
            raise ConfigError(f"{where}: key {dotted!r} must look like section.key (e.g. workload.set.dtype).")
        node = data
        for p in parents:
            if p not in node or not isinstance(node[p], dict):
                raise ConfigError(f"{where}: key {dotted!r}: {p!r} is not a section or table. Valid sections: {valid}.")
            node = node[p]
        node[leaf] = value
    with named(where):
        return RunConfig.from_dict(data, where=where)


def flat_keys(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """The leaves of a nested table under dotted keys (an empty table is a leaf)."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, Mapping) and value:
            out.update(flat_keys(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _toml_value(v: object) -> str:
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
    lines = [f"{_key(k)} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict) and v is not None]
    for k, v in data.items():
        if isinstance(v, dict):
            lines += [f"\n[{k}]", *(f"{_key(kk)} = {_toml_value(vv)}" for kk, vv in v.items() if vv is not None)]
    return "\n".join(lines) + "\n"
