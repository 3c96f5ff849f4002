"""Declarative parameter validation, in the spirit of scikit-learn's ``_parameter_constraints``: a component
states what each parameter may be, as data; :func:`check_params` checks and writes seqpoint's one error format
("The 'batch_size' parameter of FixedPolicy must be an int >= 1. Got 0."). A value passes when any constraint of
its list accepts it, and the message joins their descriptions in order ("an int >= 1 or None")."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeGuard

from seqpoint.exceptions import ConfigError

__all__ = ["Boolean", "Constraint", "Interval", "Options", "Predicate", "TypeOf", "Validated", "bounded", "check_params",
           "validate_params"]


# numbers.Integral/Real take numpy scalars too; typed int/float for the comparisons below.
def _is_int(v: object) -> TypeGuard[int]:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v: object) -> TypeGuard[float]:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


@dataclass(frozen=True)
class Interval:
    """A number in a range: ``Interval(int, 1)`` is "an int >= 1". ``kind`` ``int`` accepts integers only (no
    bool, no 2.5), ``float`` any finite real; ``left``/``right`` None leave a side open; ``closed`` says which
    bounds belong; ``word`` replaces the noun ("a number") and ``note`` is said in parentheses after it."""

    kind: type
    left: float | None = None
    right: float | None = None
    closed: Literal["left", "right", "both", "neither"] = "both"
    word: str | None = None
    note: str = ""

    def accepts(self, v: object) -> bool:
        if self.kind is int:
            if not _is_int(v):
                return False
        elif not _is_real(v) or not math.isfinite(float(v)):
            return False
        lo_ok = self.left is None or (v >= self.left if self.closed in ("left", "both") else v > self.left)
        hi_ok = self.right is None or (v <= self.right if self.closed in ("right", "both") else v < self.right)
        return bool(lo_ok and hi_ok)

    def describe(self) -> str:
        noun = self.word if self.word is not None else ("an int" if self.kind is int else "a float")
        lo, hi = self.left, self.right
        with_lo, with_hi = self.closed in ("left", "both"), self.closed in ("right", "both")
        if lo is not None and hi is not None:
            text = f"{noun} in {'[' if with_lo else '('}{lo:g}, {hi:g}{']' if with_hi else ')'}".lstrip()
        elif lo is not None:
            text = f"{noun} {'>=' if with_lo else '>'} {lo:g}"
        elif hi is not None:
            text = f"{noun} {'<=' if with_hi else '<'} {hi:g}"
        else:
            text = noun
        return f"{text} ({self.note})" if self.note else text


@dataclass(frozen=True)
class Options:
    """One of a fixed set of values, listed in the message as given."""

    values: tuple[object, ...]
    quote: bool = True

    def accepts(self, v: object) -> bool:
        return any(v == o and type(v) is type(o) for o in self.values)

    def describe(self) -> str:
        return f"one of {', '.join(repr(o) if self.quote else str(o) for o in self.values)}"


@dataclass(frozen=True)
class Predicate:
    """Any test with its own wording: ``Predicate(callable, "a callable f(schedule)")``."""

    test: Callable[[object], bool]
    word: str

    def accepts(self, v: object) -> bool:
        return bool(self.test(v))

    def describe(self) -> str:
        return self.word


def Boolean(word: str = "True or False") -> Predicate:
    """True or False (numpy booleans too), never 0/1 or "yes"."""
    return Predicate(lambda v: isinstance(v, bool) or type(v).__name__ == "bool_", word)


def TypeOf(types: type | tuple[type, ...], word: str) -> Predicate:
    """An instance of ``types`` ("a str", "a callable")."""
    return Predicate(lambda v: isinstance(v, types), word)


Constraint = Interval | Options | Predicate | None


def bounded(kind: type, low: float, high: float, *, word: str | None = None) -> Predicate:
    """A constraint "an int >= 1 and <= 16,777,216": ``Interval(kind, low, high)`` whose
    message keeps the lower bound first (as the unbounded one reads) and spells the limit."""
    lower = Interval(kind, low, word=word).describe()
    shown = f"{int(high):,}" if float(high).is_integer() else f"{high:g}"
    return Predicate(Interval(kind, low, high, word=word).accepts, f"{lower} and <= {shown}")


def check_params(owner: str, constraints: Mapping[str, Collection[Constraint]], values: Mapping[str, object]) -> None:
    """Check every ``values[name]`` against ``constraints[name]`` (a value passes when any constraint of its list
    accepts it; names without constraints are not checked) and raise ConfigError on the first miss: "The 'name'
    parameter of OWNER must be <descriptions>. Got <value>." (``owner`` empty for a free function's parameter)."""
    for name, allowed in constraints.items():
        v = values.get(name)
        if name not in values or any(v is None if c is None else c.accepts(v) for c in allowed):
            continue
        # An empty description allows a value without advertising it (device "meta").
        what = " or ".join(d for d in ("None" if c is None else c.describe() for c in allowed) if d)
        of = f" of {owner}" if owner else ""
        raise ConfigError(f"The {name!r} parameter{of} must be {what}. Got {v!r}.")


def validate_params(obj: Any) -> None:
    """Check the attributes of ``obj`` against its class's ``_parameter_constraints``."""
    spec = type(obj)._parameter_constraints
    check_params(type(obj).__name__, spec, {k: getattr(obj, k) for k in spec})


class Validated:
    """Mixin of frozen config dataclasses: ``__post_init__`` checks ``_parameter_constraints``
    (one rule per field), then ``_check()`` (rules that tie several fields together)."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {}

    def __post_init__(self) -> None:
        validate_params(self)
        self._check()

    def _check(self) -> None:
        """Cross-field rules; subclasses override."""
