"""The typed records a report reads: a projected run, a validation (by full runs or recorded runs), and their parts. The
workflows' results subclass them, so reports never import the workflows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from seqpoint.measurements import Measurements, StepWindow
from seqpoint.measurements.metrics import relative_error
from seqpoint.projection import DeviceProjection, Projection, RankProjection
from seqpoint.schedule import IterationSchedule, ScheduleSummary
from seqpoint.selection import SeqPoints
from seqpoint.validation import Drift, ErrorCurve, FullRun, ProfilingSaving, TruthComparison

__all__ = ["Baseline", "ExactCheck", "ProjectedRun", "RunRecord", "SteadyTruth", "TraceRecord", "ValidationRecord"]


@dataclass(frozen=True, kw_only=True)
class Baseline:
    """A baseline method's ``k`` points at the SeqPoints' budget, profiled by the same harness:
    its projected steady-state time (NaN when a point failed) and its signed relative error
    against the measured full run and (when measured) the steady-state truth."""

    k: int
    projected_s: float
    error: float
    selection_error: float | None = None

    def to_dict(self) -> dict[str, float]:
        out = {"k": float(self.k), "projected_s": self.projected_s, "error": self.error}
        return out if self.selection_error is None else {**out, "selection_error": self.selection_error}


@dataclass(frozen=True, kw_only=True)
class ExactCheck:
    """A deterministic metric's projection against its exact total."""

    exact: float
    projected: float

    @property
    def error(self) -> float:
        return relative_error(self.projected, self.exact)

    def to_dict(self) -> dict[str, float]:
        return {"exact": self.exact, "projected": self.projected, "error": self.error}


@dataclass(frozen=True, kw_only=True)
class SteadyTruth:
    """Every unique signature measured in isolation by the same harness (the truth an isolated
    sampling method aims at): their count-weighted times, the projection's steady-state error
    against them, and the measured full run over them, minus 1 (``in_sequence_overhead``)."""

    total_s: float
    selection_error: float
    in_sequence_overhead: float
    n_signatures: int

    def to_dict(self) -> dict[str, float]:
        return {"total_s": self.total_s, "selection_error": self.selection_error,
                "in_sequence_overhead": self.in_sequence_overhead, "n_signatures": float(self.n_signatures)}


@dataclass(kw_only=True)
class ProjectedRun:
    """SeqPoints of a schedule, their measurements and the projection from them."""

    schedule: IterationSchedule
    seqpoints: SeqPoints
    measurements: Measurements
    projection: Projection
    reduction: float
    """Iterations of the run over training steps executed to profile it."""
    unit: str = "tokens"


@dataclass(kw_only=True)
class RunRecord(ProjectedRun):
    """A projected run (``seqpoint run``)."""

    summary: ScheduleSummary
    steps_per_point: tuple[int, int, int] = (0, 0, 0)
    """``(warm-up, timed, profiled)`` training steps the harness ran for one point."""
    campaign_steps: tuple[int, int, int, int] = (1, 0, 0, 0)
    """``(worker processes, warm-up steps per point in each, their start-up and drift-check steps,
    cold-step window steps)``, counted in :attr:`reduction`."""
    saving: ProfilingSaving | None = None
    exact: dict[str, Any] | None = None
    """``ExactTotals.to_dict()`` of the whole run and the projection's ``projection_error`` per metric."""
    uncounted: list[dict[str, str | float]] | None = None
    """Timed compute operators with no FLOP formula (``name``, ``share``, ``seconds``)."""
    data_parallel: RankProjection | None = None
    """Each step its slowest rank plus the all-reduce (:attr:`projection` then sums every rank's work)."""
    device_projection: DeviceProjection | None = None
    """The run projected onto ``[projection] device``, a GPU it was not profiled on."""


@dataclass(kw_only=True)
class ValidationRecord(ProjectedRun):
    """A projection and the baselines compared with measured full runs (``seqpoint validate``)."""

    full: FullRun
    """Timed full runs of :attr:`schedule`, the part of the run executed in full."""
    baselines: dict[str, Baseline] = field(default_factory=dict)
    exact: dict[str, ExactCheck] = field(default_factory=dict)
    steady: SteadyTruth | None = None
    curves_time: dict[str, ErrorCurve] = field(default_factory=dict)
    """Error against k of each method on the full run's per-iteration times (``curves_exact``: FLOPs)."""
    curves_exact: dict[str, ErrorCurve] = field(default_factory=dict)

    @property
    def drift(self) -> Drift | None:
        """The machine's drift since profiling, on the first SeqPoint timed again after each run."""
        first = self.measurements.measurements[0] if self.measurements.measurements else None
        profiled = None if first is None or not first.ok else first.samples.get(self.full.metric)
        if not self.full.check_s.size or not profiled:
            return None
        return Drift(profiled=tuple(profiled), later=tuple(self.full.check_s.ravel().tolist()))

    @property
    def truth(self) -> TruthComparison:
        """The projected time against the full runs, its interval grown by :attr:`drift`."""
        return TruthComparison.of(self.projection.totals, self.projection.interval,
                                  tuple(self.full.totals_s.tolist()), drift=self.drift,
                                  confidence=self.projection.confidence)


@dataclass(frozen=True, kw_only=True)
class TraceRecord:
    """A projection and the first-N estimate against recorded real runs (``validate --trace``)."""

    n_iterations: int
    """Micro-batches of the run (schedule rows); ``n_steps``: its optimizer steps."""
    n_steps: int
    n_points: int
    projection: Projection
    measured_runs_s: tuple[float, ...]
    """Total seconds of each recorded run (``RunTrace.total_time_s``)."""
    first_n: int
    first_n_s: float
    """First-N estimate from the first trace: mean of its first ``first_n`` step times × steps."""
    window: StepWindow | None = None
    """The run's first micro-batches timed in sequence (``[profile] cold_window``)."""

    @property
    def truth(self) -> TruthComparison:
        return TruthComparison.of(self.projection.totals, self.projection.interval, self.measured_runs_s)

    @property
    def first_n_error(self) -> float:
        """Signed relative error of the first-N estimate against the mean recorded run."""
        return relative_error(self.first_n_s, self.truth.measured_s)
