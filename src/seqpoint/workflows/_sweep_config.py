"""The sweep file (docs/usage.md): a base run config (``base = "run.toml"`` and/or inline
sections) and its configurations, listed (``[[sweep]]`` with ``name`` and ``set``) or the
product of ``[axes]``, keyed as ``--set`` is. Every configuration is built, and so checked,
at load; all share the base's schedule and SeqPoints, so only ``[workload]`` and
``[profile]`` may vary."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from seqpoint.exceptions import ConfigError
from seqpoint.workflows._config import RunConfig, flat_keys, load_config, read_toml, set_keys

__all__ = ["REFERENCE", "SweepConfig", "SweepEntry", "load_sweep", "sweep_from_dict"]

#: Name of the base configuration, the reference of every speedup.
REFERENCE = "base"

#: Most configurations one sweep may hold (against a runaway product of axes).
MAX_CONFIGS = 1000

_SWEEP_KEYS = ("name", "base", "sweep", "axes")
_ENTRY_KEYS = ("name", "set")
#: Sections a configuration may change; the others fix the schedule and its SeqPoints.
_VARIABLE = ("workload", "profile")
#: Keys of [profile] shared by the whole sweep: one executor, whose driver alone reads and
#: writes one cache.
_SHARED_PROFILE = ("cache", "use_cache", "executor", "address")


@dataclass(frozen=True, kw_only=True)
class SweepEntry:
    """One configuration of a sweep."""

    name: str
    """Its name (``base`` for the reference)."""
    overrides: dict[str, Any]
    """Dotted ``section.key`` to the value set on the base (empty for the base)."""
    config: RunConfig
    """The resolved run config."""


@dataclass(frozen=True, kw_only=True)
class SweepConfig:
    """A base run config and the configurations swept against it."""

    name: str
    """Short name used for the run folder."""
    base: RunConfig
    """The reference configuration: its schedule and SeqPoints are every configuration's."""
    entries: tuple[SweepEntry, ...]
    """The grid, in file order (the base not included)."""

    @property
    def configurations(self) -> tuple[SweepEntry, ...]:
        """The base (named ``base``) followed by the grid."""
        return (SweepEntry(name=REFERENCE, overrides={}, config=self.base), *self.entries)

    def to_dict(self) -> dict[str, Any]:
        """Plain data: the name, the base config and each entry's overrides."""
        return {"name": self.name, "base": self.base.to_dict(),
                "configs": [{"name": e.name, "overrides": dict(e.overrides)} for e in self.entries]}


def load_sweep(path: str | Path) -> SweepConfig:
    """Read and check a sweep file; errors name the file, the entry or key, and the fix."""
    path = Path(path)
    data = read_toml(path, what="Sweep file", examples="configs/sweep-*.toml")
    return sweep_from_dict(data, where=str(path), root=path.parent)


def sweep_from_dict(data: dict[str, Any], *, where: str = "sweep", root: Path | None = None) -> SweepConfig:
    """A :class:`SweepConfig` from the parsed sweep file; errors name ``where`` (the file), and
    a relative ``base`` is read from ``root`` (default: the working directory)."""
    sections = [f.name for f in fields(RunConfig) if f.name != "name"]
    unknown = [k for k in data if k not in _SWEEP_KEYS and k not in sections]
    if unknown:
        raise ConfigError(f"Unknown key {unknown[0]!r} in {where}. Valid keys: {', '.join((*_SWEEP_KEYS, *sections))}.")
    base = _base_config(data, sections, where, root)
    grid = _listed(data.get("sweep"), where) + _product(data.get("axes"), where)
    if not grid:
        raise ConfigError(f"{where}: the sweep has no configurations; add [[sweep]] entries (name, set) "
                          "or an [axes] table of value lists.")
    if len(grid) > MAX_CONFIGS:
        raise ConfigError(f"{where}: the sweep has {len(grid)} configurations; at most "
                          f"{MAX_CONFIGS} are allowed. Use fewer axes or values.")
    seen = {REFERENCE}
    entries: list[SweepEntry] = []
    for name, overrides in grid:
        if name in seen:
            raise ConfigError(f"{where}: configuration name {name!r} is used twice"
                              + (" (it names the base)" if name == REFERENCE else "")
                              + "; give every configuration its own name.")
        seen.add(name)
        cfg = set_keys(base, overrides, where=f"{where}, configuration {name!r}")
        _check_shared(base, cfg, name, where)
        entries.append(SweepEntry(name=name, overrides=overrides, config=cfg))
    name = data.get("name", f"{base.name}-sweep")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: 'name' must be a non-empty string. Got {name!r}.")
    return SweepConfig(name=name, base=base, entries=tuple(entries))


def _base_config(data: dict[str, Any], sections: list[str], where: str, root: Path | None) -> RunConfig:
    """The base file (if any) with the inline sections' keys laid over it."""
    merged: dict[str, Any] = {}
    if "base" in data:
        ref = data["base"]
        if not isinstance(ref, str) or not ref:
            raise ConfigError(f"{where}: 'base' must be the path of a run config. Got {ref!r}.")
        path = Path(ref) if root is None or Path(ref).is_absolute() else root / ref
        if not path.is_file():
            raise ConfigError(f"{where}: base config {path} does not exist; 'base' is read relative to the sweep file.")
        merged = load_config(path).to_dict()
    for section in sections:
        if section not in data:
            continue
        table = data[section]
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: [{section}] must be a table. Got {table!r}.")
        merged[section] = {**merged.get(section, {}), **table}
    return RunConfig.from_dict(merged, where=where) if merged else RunConfig()


def _flatten(table: dict[str, Any]) -> dict[str, Any]:
    """``--set`` keys of a TOML table: ``workload.set.dtype = "bf16"`` unquoted parses as
    nested tables, and means the same as the quoted key (dashes read as underscores)."""
    return {".".join(p.strip() for p in k.split(".")).replace("-", "_"): v for k, v in flat_keys(table).items()}


def _listed(entries: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    """The ``[[sweep]]`` entries as ``(name, overrides)``."""
    if entries is None:
        return []
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(f"{where}: 'sweep' must be an array of tables ([[sweep]] with name and set).")
    out: list[tuple[str, dict[str, Any]]] = []
    for i, entry in enumerate(entries, start=1):
        extra = [k for k in entry if k not in _ENTRY_KEYS]
        if extra:
            raise ConfigError(f"{where}: [[sweep]] entry {i} has unknown key {extra[0]!r}. "
                              f"Valid keys: {', '.join(_ENTRY_KEYS)}.")
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{where}: [[sweep]] entry {i} needs a 'name' (a non-empty string).")
        overrides = entry.get("set", {})
        if not isinstance(overrides, dict):
            raise ConfigError(f"{where}: 'set' of [[sweep]] {name!r} must be a table of "
                              f"section.key = value. Got {overrides!r}.")
        out.append((name.strip(), _flatten(overrides)))
    return out


def _product(axes: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    """Every combination of the ``[axes]`` values, named ``leaf=value,leaf=value``."""
    if axes is None:
        return []
    if not isinstance(axes, dict):
        raise ConfigError(f"{where}: [axes] must be a table of section.key = [values].")
    flat = _flatten(axes)
    if not flat:  # the product of no axes would be one unnamed configuration
        return []
    for key, values in flat.items():
        if not isinstance(values, list):
            raise ConfigError(f"{where}: axis {key!r} must be a list of values. Got {values!r}.")
        if not values:
            raise ConfigError(f"{where}: axis {key!r} has no values; give a non-empty list.")
    leaves = [k.rsplit(".", 1)[-1] for k in flat]
    # Short names (dtype=bf16) unless two axes end in the same key.
    labels = leaves if len(set(leaves)) == len(leaves) else list(flat)
    out: list[tuple[str, dict[str, Any]]] = []
    for combo in itertools.product(*flat.values()):
        name = ",".join(f"{label}={_fmt(v)}" for label, v in zip(labels, combo, strict=True))
        out.append((name, dict(zip(flat, combo, strict=True))))
    return out


def _fmt(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)  # true, 2, [2, 2]


def _check_shared(base: RunConfig, cfg: RunConfig, name: str, where: str) -> None:
    """Refuse a configuration that would change the schedule, the SeqPoints or the cache."""
    a, b = base.to_dict(), cfg.to_dict()
    for section, value in a.items():
        if not isinstance(value, dict):
            continue
        changed = [k for k in value if value[k] != b[section][k]]
        if section == "profile":
            changed = [k for k in changed if k in _SHARED_PROFILE]
        elif section in _VARIABLE:
            continue
        if changed:
            raise ConfigError(f"{where}: configuration {name!r} changes {section}.{changed[0]}; every "
                              "configuration of a sweep shares the base's schedule, SeqPoints and cache, so "
                              "only [workload] and [profile] settings (not its cache or executor) may vary.")
