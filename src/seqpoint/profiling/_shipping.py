"""A workload sent to a worker process (:meth:`ShippedWorkload.of`): rebuilt there from its
``load_workload`` recipe (a large model is quicker to build than to copy), or else the
object itself, pickled (with cloudpickle when installed, which carries classes of a script
run as ``__main__``, or of a module loaded from a file, by value).
"""

from __future__ import annotations

import dataclasses
import io
import pickle
import sys
import types

from seqpoint.exceptions import ConfigError
from seqpoint.profiling._failures import name_of
from seqpoint.workloads import Workload, WorkloadRecipe

__all__ = ["ShippedWorkload"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ShippedWorkload:
    """A workload as a worker process receives it (pickled with its task): its ``name``, for
    messages, and the ``recipe`` that rebuilds it with ``load_workload`` or else the object itself
    ``pickled`` (cloudpickle when installed)."""

    name: str
    recipe: WorkloadRecipe | None = None
    pickled: bytes = b""

    @classmethod
    def of(cls, workload: Workload, *, recipe: WorkloadRecipe | None = None, what: str = "[profile] processes > 1",
           fix: str = "set [profile] processes = 1") -> ShippedWorkload:
        """What a worker process needs to get ``workload``: ``recipe`` (the one it was built from),
        a reference workload's own (``WorkloadRecipe.of_workload``), or the object
        pickled; a one-line ConfigError naming ``what`` sends it and ``fix`` when none works."""
        name = name_of(workload)
        recipe = recipe or WorkloadRecipe.of_workload(workload)
        if recipe is not None:
            return cls(name=name, recipe=recipe)
        try:
            return cls(name=name, pickled=_dumps(workload))
        # What pickle and cloudpickle raise: an object they refuse (TypeError), a local class
        # (AttributeError), a refused reducer (PicklingError), a cycle too deep (RecursionError).
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError) as exc:
            why = (str(exc).strip().splitlines() or [""])[0][:200]
            raise ConfigError(
                f"{what} sends the workload to fresh worker processes, but {type(workload).__name__} does not "
                f"pickle ({type(exc).__name__}: {why}); give it as path/to/file.py:function (a function that "
                f"builds it) so that each worker builds its own, or {fix}."
            ) from None

    def build(self) -> Workload:
        """The workload, in this process: rebuilt from its recipe or unpickled."""
        if self.recipe is not None:
            return self.recipe.build()
        workload: Workload = pickle.loads(self.pickled)
        return workload


class _PlainPickler(pickle.Pickler):
    """The standard pickle, refusing what a worker could not unpickle: a class or function
    of the script run as ``__main__`` (the worker's ``__main__`` is not that script)."""

    def reducer_override(self, obj: object) -> types.NotImplementedType:
        if isinstance(obj, type | types.FunctionType) and getattr(obj, "__module__", None) == "__main__":
            raise pickle.PicklingError(
                f"{obj.__qualname__} is defined in the script run as __main__, which a worker process "
                "imports only by value (pip install cloudpickle)")
        return NotImplemented


def _unimportable(workload: Workload) -> list[types.ModuleType]:
    """Modules of the workload's classes that a worker could not import by name (loaded from
    a file by ``importlib``, not on ``sys.path``)."""
    from importlib.machinery import PathFinder

    found: list[types.ModuleType] = []
    for cls in type(workload).__mro__:
        mod = sys.modules.get(cls.__module__)
        if mod is None or mod.__name__ in ("builtins", "__main__") or any(mod is m for m in found):
            continue
        top = mod.__name__.partition(".")[0]
        if top not in sys.builtin_module_names and PathFinder.find_spec(top, sys.path) is None:
            found.append(mod)
    return found


def _dumps(workload: Workload) -> bytes:
    try:
        import cloudpickle
    except ImportError:
        buf = io.BytesIO()
        _PlainPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(workload)
        return buf.getvalue()
    by_value = _unimportable(workload)
    for mod in by_value:
        cloudpickle.register_pickle_by_value(mod)
    try:
        data: bytes = cloudpickle.dumps(workload, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        for mod in by_value:
            cloudpickle.unregister_pickle_by_value(mod)
    return data
