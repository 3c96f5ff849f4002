"""The sections of a run config on what becomes of the measurements: ``[projection]``,
``[validation]`` and ``[report]``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from seqpoint._jsonio import MAX_LENGTH
from seqpoint._params import Boolean, Constraint, Interval, Options
from seqpoint.exceptions import ConfigError
from seqpoint.workflows._sections import (
    _EPOCHS,
    _NAMES,
    _PATH,
    _STR,
    _bounded_int,
    _check,
    in_section,
)

__all__ = ["ProjectionSection", "ReportSection", "ValidationSection"]


@dataclass(frozen=True, kw_only=True)
class ProjectionSection:
    """How the measurements become the whole run's totals."""

    method: str = "weighted"
    """``weighted`` (the SeqPoint paper's ``Σ weight · value``) or ``interpolated``."""
    confidence: float = 0.95
    """Confidence level of the interval's noise part."""
    interconnect: str | float | None = None
    """Data-parallel runs: the link the gradient all-reduce crosses, a name of
    ``seqpoint.projection.INTERCONNECTS`` (pcie4, nvlink4, ...) or bytes per second."""
    allreduce_s: float | None = None
    """Data-parallel runs: a measured all-reduce of the gradients, seconds per step (in
    place of ``interconnect``)."""

    _section_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "method": [Options(("weighted", "interpolated"))],
        "confidence": [Interval(float, 0, 1, closed="neither", word="a number")],
        "interconnect": [_STR, Interval(float, 0, None, closed="neither", word="a number"), None],
        "allreduce_s": [Interval(float, 0, None), None],
    }

    def __post_init__(self) -> None:
        _check("projection", self, self._section_constraints)
        if self.interconnect is not None and self.allreduce_s is not None:
            raise ConfigError("[projection]: give either interconnect or allreduce_s (a measured all-reduce), "
                              "not both.")
        if isinstance(self.interconnect, str):
            from seqpoint.projection import INTERCONNECTS

            if self.interconnect not in INTERCONNECTS:
                raise ConfigError(
                    f"[projection]: unknown interconnect {self.interconnect!r}; use one of "
                    f"{', '.join(INTERCONNECTS)} or a bandwidth in bytes per second."
                )


@dataclass(frozen=True, kw_only=True)
class ValidationSection:
    """Ground truth: which part of the run is executed in full, and how often."""

    epochs: int | None = None
    """Validate on the first E epochs only (unset: all)."""
    max_iterations: int | None = None
    """Validate on at most this many leading iterations (unset: all)."""
    runs: int = 2
    """Identical full runs; two or more give the noise floor."""
    baselines: tuple[str, ...] = ("first", "random", "stride", "mean", "median", "simpoint", "stratified")
    """Baselines compared with SeqPoints at the same profiling budget."""
    steady_truth: bool = True
    """Also time every unique signature, among the SeqPoints, to split the error into the
    selection error and the in-sequence overhead that isolated profiling cannot see."""
    between_workers: bool = True
    """With ``[profile] processes > 1``, time the full runs between the protocol's worker
    processes (P F P F P), so truth and projection meet the same machine speed; false:
    after them (was ``interleave``)."""

    _section_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "epochs": [_EPOCHS, None],
        "max_iterations": [Interval(int, 1, MAX_LENGTH), None],
        "runs": [_bounded_int(1000)],
        "baselines": [_NAMES],
        "steady_truth": [Boolean("true or false")],
        "between_workers": [Boolean("true or false")],
    }

    def __post_init__(self) -> None:
        _check("validation", self, self._section_constraints)
        object.__setattr__(self, "baselines", tuple(self.baselines))
        from seqpoint.selection import SELECTORS

        with in_section("validation"):
            for name in self.baselines:
                SELECTORS.get(name)  # unknown names list the valid ones


@dataclass(frozen=True, kw_only=True)
class ReportSection:
    """What a run writes."""

    out: str | None = None
    """Run folder; default ``runs/<name>-<timestamp>``."""
    plots: bool = True
    """Write PNG plots."""
    html: bool = True
    """Write ``report.html``."""

    _section_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "out": [_PATH, None],
        "plots": [Boolean("true or false")],
        "html": [Boolean("true or false")],
    }

    def __post_init__(self) -> None:
        _check("report", self, self._section_constraints)
