"""What a report reads from a run or a validation, as protocols owned by the reports.

The workflows' results (``RunResult``, ``ValidationResult``) satisfy these structurally;
reports never import the workflows, so the workflows can write reports without a circle.
"""

from __future__ import annotations

from typing import Any, Protocol

from seqpoint.measurements import Measurements, StepWindow
from seqpoint.projection import Projection, RankProjection
from seqpoint.schedule import IterationSchedule, ScheduleSummary
from seqpoint.selection import SeqPoints
from seqpoint.validation import ErrorCurve, FullRun, ProfilingSaving

__all__ = ["ProjectedView", "RunView", "TraceView", "ValidationView"]


class ProjectedView(Protocol):
    """SeqPoints of a schedule, their measurements and the projection from them."""

    @property
    def schedule(self) -> IterationSchedule: ...
    @property
    def seqpoints(self) -> SeqPoints: ...
    @property
    def measurements(self) -> Measurements: ...
    @property
    def projection(self) -> Projection: ...
    @property
    def unit(self) -> str:
        """Unit of sequence lengths (``frames`` or ``tokens``)."""
    @property
    def reduction(self) -> float:
        """Iterations of the run over training steps executed to profile it."""


class RunView(ProjectedView, Protocol):
    """A projected run (``seqpoint run``)."""

    @property
    def summary(self) -> ScheduleSummary: ...
    @property
    def steps_per_point(self) -> tuple[int, int, int]:
        """``(warm-up, timed, profiled)`` training steps per point."""
    @property
    def campaign_steps(self) -> tuple[int, int, int, int]:
        """``(worker processes, warm-up steps per point in each, start-up and drift-check
        steps, cold-step window steps)``."""
    @property
    def saving(self) -> ProfilingSaving | None:
        """The saving in wall clock and tokens beside the step count."""
    @property
    def exact(self) -> dict[str, Any] | None:
        """Exact deterministic totals of the whole run (``ExactTotals.to_dict()`` and the
        projection's ``projection_error`` per metric), when measured."""
    @property
    def uncounted(self) -> list[dict[str, Any]] | None:
        """Timed compute operators with no FLOP formula (``name``, ``share``)."""
    @property
    def data_parallel(self) -> RankProjection | None:
        """A data-parallel run's projection (slowest rank plus all-reduce per step)."""


class ValidationView(ProjectedView, Protocol):
    """A projection compared with measured full runs (``seqpoint validate``)."""

    @property
    def full(self) -> FullRun: ...
    @property
    def baselines(self) -> dict[str, dict[str, float]]:
        """Method -> ``{"k", "projected_s", "error"[, "selection_error"]}``."""
    @property
    def exact(self) -> dict[str, dict[str, float]]:
        """Metric -> ``{"exact", "projected", "error"}``."""
    @property
    def steady(self) -> dict[str, float]:
        """``total_s``, ``selection_error``, ``in_sequence_overhead``, ``n_signatures``."""
    @property
    def curves_time(self) -> dict[str, ErrorCurve]: ...
    @property
    def curves_exact(self) -> dict[str, ErrorCurve]: ...
    @property
    def measured_s(self) -> float: ...
    @property
    def projected_s(self) -> float: ...
    @property
    def error(self) -> float: ...
    @property
    def interval_s(self) -> tuple[float, float]: ...
    @property
    def within_interval(self) -> bool: ...


class TraceView(Protocol):
    """What the trace-validation summary reads (``workflows.TraceValidation`` fits it)."""

    @property
    def n_iterations(self) -> int: ...

    @property
    def n_steps(self) -> int: ...

    @property
    def n_points(self) -> int: ...

    @property
    def measured_runs_s(self) -> tuple[float, ...]: ...

    @property
    def first_n(self) -> int: ...

    @property
    def first_n_s(self) -> float: ...

    @property
    def measured_s(self) -> float: ...

    @property
    def noise_floor(self) -> float: ...

    @property
    def projected_s(self) -> float: ...

    @property
    def interval_s(self) -> tuple[float, float]: ...

    @property
    def error(self) -> float: ...

    @property
    def first_n_error(self) -> float: ...

    @property
    def window(self) -> StepWindow | None:
        """The run's first micro-batches timed in sequence (``[profile] cold_window``), or None."""

    @property
    def cold_term(self) -> dict[str, Any]:
        """The projection's cold-step term (``method``, ``share``, ``in_run_ratio``); empty without one."""
