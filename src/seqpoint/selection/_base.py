"""The selector contract shared by SeqPoint and every baseline, and their registry."""

from __future__ import annotations

import inspect
from typing import Any, ClassVar, Self

import numpy as np

from seqpoint._params import Constraint, Interval, check_params
from seqpoint._registry import Registry
from seqpoint._signature import FloatArray, IntArray
from seqpoint.exceptions import ConfigError, NotFittedError
from seqpoint.schedule import IterationSchedule
from seqpoint.selection._cost import describe_cost
from seqpoint.selection._seqpoints import SeqPoint, SeqPoints

__all__ = ["SELECTORS", "BaseSelector", "make_selector"]

#: Selectors by their command-line name (``seqpoint select --method NAME``).
SELECTORS: Registry[type[BaseSelector]] = Registry("selection method")


def make_selector(name: str, **params: Any) -> BaseSelector:
    """Build the selector registered as ``name`` with keyword ``params`` (unknown ones listed)."""
    cls = SELECTORS.get(name)
    accepted = cls._param_names()
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ConfigError(f"Unknown parameter(s) {', '.join(map(repr, unknown))} for the {name!r} "
                          f"selector. Valid parameters: {', '.join(accepted)}.")
    return cls(**params)


class BaseSelector:
    """scikit-learn-style estimator: ``fit(schedule)`` chooses points and weights.

    Fitted attributes: ``points_`` (k,), the increasing row positions (int64) of the chosen
    iterations; ``weights_`` (k,), the iterations each stands for (float64, >= 0, summing to
    ``n_iterations``); ``labels_`` (n_iterations,), the index into ``points_`` of every
    iteration's representative; ``n_points_``, ``k`` (below ``n_points`` with fewer distinct
    signatures, or by BIC); ``estimated_error_``, the selector's own estimate of the relative
    projection error (a fraction) or None; ``n_iterations_``, the fitted schedule's length.
    """

    #: Registry name, set by each subclass.
    name: ClassVar[str] = ""

    #: What each constructor parameter may be; subclasses add their own.
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "random_state": [None, Interval(int, 0)], "n_points": [Interval(int, 1)]}
    #: Parameters of which exactly one is given, the other None (``n_points``/``max_error``).
    _one_of: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *, n_points: int | None = 10, random_state: int | None = 0) -> None:
        self.n_points = n_points
        self.random_state = random_state

    @classmethod
    def _param_names(cls) -> list[str]:
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def get_params(self) -> dict[str, object]:
        """Constructor parameters as a dict (scikit-learn contract)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: a fitted attribute read before fit.
        if name.endswith("_") and not name.startswith("_"):
            raise NotFittedError(f"This {type(self).__name__} is not fitted yet; call "
                                 f"fit(schedule) before reading {name!r}.")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _check_common(self, schedule: IterationSchedule) -> int:
        """Check every parameter (exactly one of ``_one_of`` given) and ``n_points`` <= n; return n."""
        owner = type(self).__name__
        if not isinstance(schedule, IterationSchedule):
            raise ConfigError(f"{owner}.fit expects an IterationSchedule. Got {type(schedule).__name__}.")
        values = self.get_params()
        unset = {name for name in self._one_of if values[name] is None}
        if self._one_of and len(unset) != len(self._one_of) - 1:
            raise ConfigError(f"{owner} needs exactly one of {' and '.join(map(repr, self._one_of))}. "
                              f"Got {'neither' if unset else 'both'}.")
        check_params(owner, self._parameter_constraints, {k: v for k, v in values.items() if k not in unset})
        n = len(schedule)
        if self.n_points is not None and self.n_points > n:
            raise ConfigError(f"The 'n_points' parameter of {owner} must be <= the schedule's {n} "
                              f"iterations. Got {self.n_points}.")
        return n

    def _rng(self) -> np.random.Generator:
        return np.random.default_rng(self.random_state)

    def fit(self, schedule: IterationSchedule) -> BaseSelector:
        """Choose points for ``schedule``; returns ``self``."""
        raise NotImplementedError

    def _set_result(self, n: int, points: IntArray, weights: FloatArray, labels: IntArray,
                    estimated_error: float | None = None) -> None:
        """Store fitted attributes, sorting points by row position."""
        points, weights = np.asarray(points, dtype=np.int64), np.asarray(weights, dtype=np.float64)
        assert points.shape == weights.shape and np.shape(labels) == (n,)
        assert abs(float(weights.sum()) - n) <= 1e-6 * n, (weights.sum(), n)
        order = np.argsort(points, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.shape[0], dtype=np.int64)
        self.points_, self.weights_, self.labels_ = points[order], weights[order], rank[np.asarray(labels)]
        self.n_points_, self.n_iterations_ = int(points.shape[0]), n
        self.estimated_error_ = estimated_error

    def _equal_weights(self, n: int, rows: IntArray, labels: IntArray) -> Self:
        """Store ``rows`` as the points, each standing for ``n / k`` iterations; returns ``self``."""
        self._set_result(n, rows, np.full(rows.shape[0], n / rows.shape[0]), labels)
        return self

    def _meta_params(self) -> dict[str, object]:
        plain: dict[str, object] = {k: v if v is None or isinstance(v, str | int | float | bool) else repr(v)
                                    for k, v in self.get_params().items()}
        return {**plain, "cost": describe_cost(self.cost)} if "cost" in plain else plain

    def _meta_diagnostics(self) -> dict[str, float]:
        """Fitted diagnostics recorded in ``SeqPoints.meta`` (JSON scalars only)."""
        return {} if self.estimated_error_ is None else {"estimated_error": float(self.estimated_error_)}

    def to_seqpoints(self, schedule: IterationSchedule) -> SeqPoints:
        """The fitted points of ``schedule`` as a :class:`SeqPoints` set (SEQPOINTS.json);
        ``meta`` records the parameters, ``k`` and the diagnostics (``estimated_error``)."""
        if len(schedule) != self.n_iterations_:
            raise ConfigError(f"to_seqpoints got a schedule of {len(schedule)} iterations but the "
                              f"selector was fitted on {self.n_iterations_}; pass the fitted schedule.")
        pts = tuple(SeqPoint.from_row(schedule, r, wt)
                    for r, wt in zip(self.points_.tolist(), self.weights_.tolist(), strict=True))
        meta = {"params": self._meta_params(), "k": self.n_points_, **self._meta_diagnostics()}
        return SeqPoints(method=self.name, n_iterations=len(schedule), points=pts, meta=meta)
