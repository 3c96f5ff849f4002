"""The measured speedup of two configurations: their full runs, timed in alternating rounds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import InputError
from seqpoint.validation._compare import noise_floor

__all__ = ["MeasuredSpeedup"]


@dataclass(frozen=True)
class MeasuredSpeedup:
    """``T_a / T_b`` of full runs timed in rounds (a then b, b then a, ...).

    Round ``i`` holds ``runs_a_s[i]`` and ``runs_b_s[i]``, timed next to each other, so a
    change of the machine's speed between rounds moves both; alternating the order in
    each round cancels a steady drift.
    """

    runs_a_s: tuple[float, ...]
    """Configuration a's full-run totals, one per round, seconds."""
    runs_b_s: tuple[float, ...]
    """Configuration b's, seconds."""

    def __post_init__(self) -> None:
        a, b = np.asarray(self.runs_a_s, dtype=np.float64), np.asarray(self.runs_b_s, dtype=np.float64)
        if a.shape != b.shape or a.size == 0:
            raise InputError(f"A measured speedup needs one run of each configuration per round; "
                             f"got {a.size} of a and {b.size} of b.")
        if not (np.isfinite(a).all() and np.isfinite(b).all() and (a > 0).all() and (b > 0).all()):
            raise InputError("A measured speedup needs positive, finite run times.")
        object.__setattr__(self, "runs_a_s", tuple(float(x) for x in a))
        object.__setattr__(self, "runs_b_s", tuple(float(x) for x in b))

    @classmethod
    def from_rounds(cls, rounds: Sequence[tuple[float, float]]) -> MeasuredSpeedup:
        """From ``(a, b)`` run totals, one pair per round."""
        return cls(tuple(a for a, _ in rounds), tuple(b for _, b in rounds))

    @property
    def n_rounds(self) -> int:
        return len(self.runs_a_s)

    @property
    def value(self) -> float:
        """Ratio of the mean full runs."""
        return float(np.mean(self.runs_a_s) / np.mean(self.runs_b_s))

    @property
    def noise_floor(self) -> float:
        """Spread of ``a/b`` over every pairing of a's and b's runs, relative to its mean
        (0 with one round, one pairing): no speedup error below it is meaningful."""
        ratios = [x / y for x in self.runs_a_s for y in self.runs_b_s]
        return noise_floor(ratios) if len(ratios) >= 2 else 0.0

    @property
    def per_round(self) -> NDArray[np.float64]:
        """Each round's own ``a/b``."""
        return np.asarray(self.runs_a_s) / np.asarray(self.runs_b_s)

    @property
    def standard_error(self) -> float | None:
        """Relative standard error of the ratio, from the rounds' own ratios (None with
        one round)."""
        if self.n_rounds < 2:
            return None
        r = self.per_round
        return float(r.std(ddof=1) / np.sqrt(r.size) / self.value)

    def held_by(self, interval: tuple[float, float]) -> bool:
        """Whether ``interval`` (a projection's ``(low, high)``) contains this speedup."""
        lo, hi = interval
        return bool(lo <= self.value <= hi)

    def agrees_with(self, projected: float, interval: tuple[float, float], confidence: float = 0.95) -> bool | None:
        """Whether a projection and this speedup agree once the measured ratio's own error
        counts: ``|projected − value| ≤ √(h² + (z·se·value)²)``, with ``h`` the interval's
        half-width about ``projected`` (its wider side: a low end cut at 0 does not
        narrow it), ``se`` :attr:`standard_error` and ``z`` the normal quantile of
        ``confidence``. A miss of :meth:`held_by` that this forgives is the truth's noise,
        not the projection's; None with one round (no standard error)."""
        se = self.standard_error
        if se is None:
            return None
        lo, hi = interval
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        return bool(abs(projected - self.value) <= float(np.hypot(max(hi - projected, projected - lo), z * se * self.value)))

    def error_of(self, projected: float) -> float:
        """Relative error of a projected speedup against this one."""
        return (projected - self.value) / self.value

    def to_dict(self) -> dict[str, Any]:
        return {"speedup": self.value, "runs_a_s": list(self.runs_a_s), "runs_b_s": list(self.runs_b_s),
                "noise_floor": self.noise_floor, "standard_error": self.standard_error}
