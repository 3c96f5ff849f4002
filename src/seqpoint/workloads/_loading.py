"""The workload registry, :func:`load_workload` (``name``, ``name:preset``, ``module:function``) and the recipe that
builds the same workload in another process, kept in a registry seqpoint owns (never on the user's object)."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import importlib.util
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from seqpoint._config import parse_value
from seqpoint._params import Constraint, bounded, check_params
from seqpoint._registry import Registry
from seqpoint.exceptions import ConfigError
from seqpoint.workloads._base import TorchWorkload, Workload, WorkloadConfig
from seqpoint.workloads._bert import Bert
from seqpoint.workloads._deepspeech2 import DeepSpeech2
from seqpoint.workloads._gnmt import GNMT
from seqpoint.workloads._user import UserWorkload

__all__ = ["WORKLOADS", "WorkloadRecipe", "check_user_code", "load_workload", "workload_config"]

#: Most CPU threads a workload may ask for (``--set threads=N``); torch allocates per thread.
MAX_THREADS = 1024

#: Upper bounds of shared workload settings, checked with the value's type.
_OVERRIDE_LIMITS: dict[str, list[Constraint]] = {"threads": [bounded(int, 0, MAX_THREADS)],
                                                 "micro_batches": [bounded(int, 1, 4096)]}

Override = str | int | float | bool | tuple[int, ...]


#: Reference workload classes by name (``deepspeech2``, ``gnmt``, ``bert``); each builds from its
#: ``Config`` (with ``PRESETS``) as ``cls(config, preset=...)``.
WORKLOADS: Registry[type[TorchWorkload]] = Registry("workload")
for _cls in (DeepSpeech2, GNMT, Bert):
    WORKLOADS.register(_cls.family)(_cls)


def workload_config(spec: str, overrides: Mapping[str, object] | None = None) -> WorkloadConfig | None:
    """The config :func:`load_workload` builds the registered workload ``name[:preset]`` from,
    without torch; None for user code (``module:function``), imported only when it is built."""
    name, _, preset = spec.partition(":")
    if name not in WORKLOADS:
        return None
    cls = WORKLOADS.get(name).Config
    if preset and preset not in cls.PRESETS:
        raise ConfigError(f"Unknown preset {preset!r} of workload {name!r}. Valid presets: {', '.join(cls.PRESETS)}.")
    base = cls.PRESETS[preset] if preset else cls()
    return dataclasses.replace(base, **parse_overrides(cls, overrides or {}))


def _coerce(cls: type, key: str, raw: object, annotation: object) -> object:
    """Convert ``raw`` (a CLI string or a TOML value) to the field's declared type."""
    where = f"The {key!r} parameter of {cls.__name__}"
    # A string means what it means as a --set value (TOML): "2" is 2, "1.5" and "two" are not ints.
    value = parse_value(raw) if isinstance(raw, str) else raw
    if annotation is bool or annotation == bool | None:  # None is the default, not a value to give
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{where} must be a bool (true/false). Got {raw!r}.")
    if annotation is int:  # a float is an int only when it is whole
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{where} must be an int. Got {raw!r}.")
        return value
    if annotation is float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ConfigError(f"{where} must be a number. Got {raw!r}.")
        return float(value)
    if annotation is str:
        return str(raw)
    if typing.get_origin(annotation) is tuple:
        parts = list(raw) if isinstance(raw, list | tuple) else [
            p for p in str(raw).replace("x", ",").split(",") if p.strip()]
        values = [parse_value(p) if isinstance(p, str) else p for p in parts]
        if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise ConfigError(f"{where} must be ints separated by commas (e.g. 2,2). Got {raw!r}.")
        return tuple(values)
    return raw


def parse_overrides(cls: type[WorkloadConfig], overrides: Mapping[str, object]) -> dict[str, Any]:
    """Coerce ``overrides`` to the field types of ``cls``; unknown keys list the valid ones."""
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for key, raw in overrides.items():
        if key not in fields:
            raise ConfigError(f"Unknown workload setting {key!r} for {cls.__name__}. "
                              f"Valid keys: {', '.join(sorted(fields))}.")
        out[key] = _coerce(cls, key, raw, hints[key])
    check_params(cls.__name__, _OVERRIDE_LIMITS, out)
    return out


def check_user_code(spec: str, *, allowed: bool) -> None:
    """Refuse an importable ``module:function`` workload unless ``allowed`` (``--allow-user-code``): it runs whatever
    that name imports to. A ``path/to/file.py:function`` names its file, which is explicit enough."""
    module, _, function = spec.partition(":")
    if allowed or not function or module in WORKLOADS or module.endswith(".py"):
        return
    raise ConfigError(f"Workload {spec!r} is not a registered workload ({', '.join(WORKLOADS.names())}), so it "
                      f"is user code: it would import module {module!r} and run it. Give a registered workload, "
                      f"add --allow-user-code to allow user code, or name the file (path/to/file.py:function).")


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkloadRecipe:
    """What a workload is built from, in this process or another: :meth:`build` builds it."""

    spec: str
    """``name[:preset]``, ``module:function`` or ``/abs/path/to/file.py:function``."""
    overrides: dict[str, Any]
    """The config fields (or factory keyword arguments) it was given."""

    @classmethod
    def of(cls, spec: str, overrides: Mapping[str, Override] | None = None) -> WorkloadRecipe:
        """The recipe of ``load_workload(spec, overrides)``, a file named by its full path so
        that a worker process in another folder builds the same workload."""
        name, _, fn = spec.partition(":")
        if name.endswith(".py"):
            spec = f"{Path(name).resolve()}:{fn}"
        return cls(spec=spec, overrides=dict(overrides or {}))

    @classmethod
    def of_workload(cls, workload: Workload) -> WorkloadRecipe | None:
        """The recipe that rebuilds a reference workload built directly (its name and full
        config); None for anything else, which travels pickled unless its builder kept its recipe."""
        name = str(getattr(workload, "name", ""))
        family = name.partition(":")[0]
        config: object = getattr(workload, "config", None)
        if family in WORKLOADS and type(workload) is WORKLOADS.get(family) and hasattr(config, "to_dict"):
            return cls(spec=name, overrides=dict(config.to_dict()))
        return None

    def build(self) -> Workload:
        """The workload (:func:`load_workload`)."""
        return load_workload(self.spec, self.overrides)

    @property
    def source_files(self) -> tuple[str, ...]:
        """The file of a user workload's factory (part of its code: the cache key hashes it)."""
        module, _, fn = self.spec.partition(":")
        if not fn or module in WORKLOADS:
            return ()
        if module.endswith(".py"):
            return (module,)
        with contextlib.suppress(ImportError, ValueError):
            found = importlib.util.find_spec(module)
            if found is not None and found.origin and found.origin.endswith(".py"):
                return (found.origin,)
        return ()


def load_workload(spec: str, overrides: Mapping[str, Override] | None = None) -> Workload:
    """Build a workload from ``name``, ``name:preset`` or ``module:function``.

    Parameters
    ----------
    spec : str
        ``deepspeech2``, ``gnmt:tiny``, ``bert:paper``; or a user workload:
        ``package.module:function`` (imported from ``sys.path``, never implicitly from the
        working folder), ``path/to/file.py:function`` (run as ``python path/to/file.py``
        would, its folder first on ``sys.path``), where ``function(**overrides)`` returns a
        :class:`Workload`, or ``file.py:ClassName`` of a
        :class:`~seqpoint.workloads.UserWorkload` subclass built from its ``Config``. User
        code runs with the caller's rights.
    overrides : dict, optional
        Config fields to change (``{"dtype": "bf16", "threads": 2}``); ``--set`` strings are
        converted to the field's type.

    Returns
    -------
    Workload
        A worker process builds the same one from ``WorkloadRecipe.of(spec, overrides)``.
    """
    overrides = dict(overrides or {})
    name, _, preset = spec.partition(":")
    cfg = workload_config(spec, overrides)
    if cfg is not None:
        return WORKLOADS.get(name)(cfg, preset=preset or None)
    if not preset:
        WORKLOADS.get(name)  # raises, listing the valid names
    return _load_user(name, preset, overrides)


def _import_user_module(module: str) -> types.ModuleType:
    """Import ``module`` from ``sys.path``, or load ``path/to/file.py`` as ``python file.py`` would (its folder first on
    ``sys.path``, kept there). The working folder is not searched: a stray ``.py`` file must not run by accident. A
    missing import inside the file is one ConfigError naming the module."""
    if not module.endswith(".py"):
        return importlib.import_module(module)
    path = Path(module).resolve()
    if not path.is_file():
        raise ImportError(f"no file {module}")
    # A name unique to the path, so two files called model.py do not replace each other.
    name = f"seqpoint_user_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {module} as Python")
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(mod)
    except ModuleNotFoundError as exc:
        sys.modules.pop(name, None)
        raise ConfigError(f"Workload file {module} imports module {exc.name!r}, which was not found ({exc}); the "
                          f"file's folder {folder} is on the import path, so it is neither beside the file nor "
                          "installed: install the package, or add the folder that holds it to PYTHONPATH.") from None
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def _load_user(module: str, function: str, overrides: dict[str, Any]) -> Workload:
    if not module.strip() or not function.isidentifier():
        raise ConfigError(f"Workload {module}:{function}: give NAME[:PRESET] of a registered workload "
                          f"({', '.join(WORKLOADS.names())}), module:function or path/to/file.py:function.")
    try:
        mod = _import_user_module(module)
    except ConfigError:
        raise
    except (ImportError, ValueError) as exc:
        raise ConfigError(f"Workload {module}:{function}: cannot import module {module!r} ({exc}). "
                          f"Give a registered workload ({', '.join(WORKLOADS.names())}) or an importable "
                          "module:function.") from None
    fn = getattr(mod, function, None)
    if not callable(fn):
        raise ConfigError(f"Workload {module}:{function}: {module!r} has no function {function!r}.")
    try:
        wl = _build_user_class(fn, overrides) if isinstance(fn, type) and issubclass(fn, UserWorkload) else fn(**overrides)
    except TypeError as exc:
        raise ConfigError(f"Workload {module}:{function} cannot be called as {function}(**settings) ({exc}); "
                          "a workload factory takes the --set settings as keyword arguments.") from None
    if not isinstance(wl, Workload):
        raise ConfigError(f"Workload {module}:{function} returned {type(wl).__name__}, which lacks "
                          "name/config/make_batch/step.")
    return wl


def _build_user_class(cls: type[UserWorkload], overrides: dict[str, Any]) -> Workload:
    """``cls(config)`` with the ``--set`` values typed by ``cls.Config``'s fields."""
    config_cls = cls.Config
    if not (isinstance(config_cls, type) and issubclass(config_cls, WorkloadConfig)):
        raise ConfigError(f"Workload {cls.__name__}: its Config must be a dataclass extending "
                          f"seqpoint.workloads.WorkloadConfig. Got {config_cls!r}.")
    config = config_cls(**parse_overrides(config_cls, overrides))
    return cls(config)
