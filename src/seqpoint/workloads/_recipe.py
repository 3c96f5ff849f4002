"""How another process builds the same workload: the spec and overrides
:func:`~seqpoint.workloads.load_workload` built it from, recorded in a registry seqpoint
owns (:func:`remember_recipe`, :func:`recorded_recipe`).

A worker process (``[profile] processes > 1``, a cold-step window) needs its own copy of
the workload. One that ``load_workload`` built is rebuilt there from the same spec and
overrides, kept here and not on the object: the object is the user's.
:func:`~seqpoint.workloads.workload_recipe` is the public look-up.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Mapping
from typing import Any

__all__ = ["WorkloadRecipe", "recorded_recipe", "remember_recipe"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkloadRecipe:
    """What :func:`~seqpoint.workloads.load_workload` builds a workload from:
    ``load_workload(recipe.spec, recipe.overrides)`` builds it again."""

    spec: str
    """``name[:preset]``, ``module:function`` or ``/abs/path/to/file.py:function``."""
    overrides: dict[str, Any]
    """The config fields (or factory keyword arguments) it was given."""


#: ``id(workload)`` → (a weak reference to it, its recipe): entries leave with their workload.
_BUILT: dict[int, tuple[weakref.ref[Any], WorkloadRecipe]] = {}


def remember_recipe(workload: object, spec: str, overrides: Mapping[str, Any]) -> None:
    """Record that ``load_workload(spec, overrides)`` built ``workload``.

    An object that takes no weak reference (``__slots__`` without ``__weakref__``) is
    not recorded: it travels to a worker pickled instead.
    """
    key = id(workload)
    try:
        ref = weakref.ref(workload, lambda _: _BUILT.pop(key, None))
    except TypeError:
        return
    _BUILT[key] = (ref, WorkloadRecipe(spec=spec, overrides=dict(overrides)))


def recorded_recipe(workload: object) -> WorkloadRecipe | None:
    """The recipe :func:`remember_recipe` recorded for this very object, or None."""
    entry = _BUILT.get(id(workload))
    return entry[1] if entry is not None and entry[0]() is workload else None
