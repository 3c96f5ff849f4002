"""How another process builds the same workload: the spec and overrides
:func:`~seqpoint.workloads.load_workload` built it from, kept in a registry seqpoint owns
(never on the user's object) for worker processes."""

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
_BUILT: dict[int, tuple[weakref.ref[object], WorkloadRecipe]] = {}


def remember_recipe(workload: object, spec: str, overrides: Mapping[str, object]) -> None:
    """Record that ``load_workload(spec, overrides)`` built ``workload`` (an object without weak
    references is not recorded: it travels pickled)."""
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
