"""A small named registry, one per plugin family (policies, selectors, workloads, timers)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from seqpoint.exceptions import ConfigError

T = TypeVar("T")

__all__ = ["Registry"]


class Registry(Generic[T]):
    """Maps short lower-case names to objects; ``family`` ("batching policy") names them in errors."""

    def __init__(self, family: str) -> None:
        self.family = family
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register ``obj`` under ``name``. Duplicate names are an error."""
        if not name or name != name.lower() or " " in name:
            raise ConfigError(f"A {self.family} name must be a non-empty lower-case word. Got {name!r}.")

        def deco(obj: T) -> T:
            if name in self._items:
                raise ConfigError(f"The {self.family} {name!r} is already registered.")
            self._items[name] = obj
            return obj

        return deco

    def get(self, name: str) -> T:
        """Return the object registered as ``name``; unknown names list the valid ones."""
        if not isinstance(name, str):  # a TOML table or array where a name goes
            raise ConfigError(f"A {self.family} is named by a string; got {type(name).__name__} {name!r}. "
                              f"Valid names: {', '.join(self.names())}.")
        try:
            return self._items[name]
        except KeyError:
            raise ConfigError(f"Unknown {self.family} {name!r}. Valid names: {', '.join(self.names())}.") from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
