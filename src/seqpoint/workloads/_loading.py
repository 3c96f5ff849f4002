"""The workload registry and :func:`load_workload` (``name``, ``name:preset``, ``module:function``)."""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from seqpoint._config import parse_value
from seqpoint._registry import Registry
from seqpoint.exceptions import ConfigError
from seqpoint.workloads._base import Workload, WorkloadConfig

__all__ = [
    "WORKLOADS",
    "WorkloadSpec",
    "config_class",
    "load_workload",
    "parse_overrides",
]

Override = str | int | float | bool | tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class WorkloadSpec:
    """A registered reference workload: its config class and the class that builds it."""

    config_cls: type[WorkloadConfig]
    """Frozen config dataclass (with ``PRESETS``)."""
    factory: Callable[..., Workload]
    """``factory(config, preset=...)`` returns the workload."""


#: Reference workloads by name (``deepspeech2``, ``gnmt``, ``bert``).
WORKLOADS: Registry[WorkloadSpec] = Registry("workload")


def _register_builtin() -> None:
    # Imported here (not at module top) so each model module stays torch-free to import.
    from seqpoint.workloads._bert import Bert, BertConfig
    from seqpoint.workloads._deepspeech2 import DeepSpeech2, DeepSpeech2Config
    from seqpoint.workloads._gnmt import GNMT, GNMTConfig

    WORKLOADS.register("deepspeech2")(WorkloadSpec(DeepSpeech2Config, DeepSpeech2))
    WORKLOADS.register("gnmt")(WorkloadSpec(GNMTConfig, GNMT))
    WORKLOADS.register("bert")(WorkloadSpec(BertConfig, Bert))


_register_builtin()


def config_class(name: str) -> type[WorkloadConfig]:
    """The config dataclass of the reference workload ``name``."""
    return WORKLOADS.get(name).config_cls


def _coerce(cls: type, key: str, raw: Any, annotation: Any) -> Any:
    """Convert ``raw`` (a CLI string or a TOML value) to the field's declared type."""
    origin = typing.get_origin(annotation)
    where = f"The {key!r} parameter of {cls.__name__}"
    if annotation is bool:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{where} must be a bool (true/false). Got {raw!r}.")
    if annotation is int:
        # A string means what it means as a --set value (TOML): "2" is 2, "1.5" and
        # "two" are not ints; a float is an int only when it is whole.
        value = parse_value(raw) if isinstance(raw, str) else raw
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{where} must be an int. Got {raw!r}.")
        return value
    if annotation is float:
        value = parse_value(raw) if isinstance(raw, str) else raw
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ConfigError(f"{where} must be a number. Got {raw!r}.")
        return float(value)
    if annotation is str:
        return str(raw)
    if origin is tuple:
        parts = (
            list(raw)
            if isinstance(raw, list | tuple)
            else [p for p in str(raw).replace("x", ",").split(",") if p.strip()]
        )
        values = [parse_value(p) if isinstance(p, str) else p for p in parts]
        if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise ConfigError(
                f"{where} must be ints separated by commas (e.g. 2,2). Got {raw!r}."
            )
        return tuple(values)
    return raw


def parse_overrides(cls: type[WorkloadConfig], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Coerce ``overrides`` to the field types of ``cls``; unknown keys list the valid ones."""
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for key, raw in overrides.items():
        if key not in fields:
            raise ConfigError(
                f"Unknown workload setting {key!r} for {cls.__name__}. "
                f"Valid keys: {', '.join(sorted(fields))}."
            )
        ann = hints[key]
        if isinstance(ann, types.UnionType):  # pragma: no cover - no optional fields yet
            ann = next(a for a in typing.get_args(ann) if a is not type(None))
        out[key] = _coerce(cls, key, raw, ann)
    return out


def load_workload(spec: str, overrides: Mapping[str, Override] | None = None) -> Workload:
    """Build a workload from ``name``, ``name:preset`` or ``module:function``.

    Parameters
    ----------
    spec : str
        ``deepspeech2``, ``gnmt:tiny``, ``bert:paper``; or ``package.module:function``
        for a user workload: ``function(**overrides)`` must return a :class:`Workload`.
    overrides : dict, optional
        Config fields to change (``{"dtype": "bf16", "threads": 2}``). Strings from
        ``--set key=value`` are converted to the field's type.

    Returns
    -------
    Workload
    """
    overrides = dict(overrides or {})
    name, _, preset = spec.partition(":")
    if name in WORKLOADS:
        ws = WORKLOADS.get(name)
        presets = ws.config_cls.PRESETS
        if preset and preset not in presets:
            raise ConfigError(
                f"Unknown preset {preset!r} of workload {name!r}. Valid presets: {', '.join(presets)}."
            )
        base = presets[preset] if preset else ws.config_cls()
        cfg = dataclasses.replace(base, **parse_overrides(ws.config_cls, overrides))
        return ws.factory(cfg, preset=preset or None)
    if preset:
        return _load_user(name, preset, overrides)
    WORKLOADS.get(name)  # raises: lists the valid names
    raise AssertionError("unreachable")


def _import_user_module(module: str) -> types.ModuleType:
    """Import ``module``; like ``python -m``, the working directory is searched too."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        if cwd in sys.path or exc.name is None or not module.startswith(exc.name):
            raise
        sys.path.insert(0, cwd)
        return importlib.import_module(module)


def _load_user(module: str, function: str, overrides: dict[str, Any]) -> Workload:
    try:
        mod = _import_user_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"Workload {module}:{function}: cannot import module {module!r} ({exc}). "
            f"Give a registered workload ({', '.join(WORKLOADS.names())}) or an importable "
            "module:function."
        ) from None
    fn = getattr(mod, function, None)
    if not callable(fn):
        raise ConfigError(f"Workload {module}:{function}: {module!r} has no function {function!r}.")
    wl = fn(**overrides)
    if not isinstance(wl, Workload):
        raise ConfigError(
            f"Workload {module}:{function} returned {type(wl).__name__}, which lacks "
            "name/config/make_batch/step."
        )
    return wl
