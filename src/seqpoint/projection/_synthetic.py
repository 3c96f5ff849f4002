"""Errors against a known truth: projecting a cost known for every iteration (exact FLOPs, a
synthetic benchmark cost), so that the projection error of a selection is exact."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from seqpoint.exceptions import InputError
from seqpoint.projection._match import seqpoint_rows
from seqpoint.projection._model import PointProjector, ScheduleModel, check_method, model_for
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import BaseSelector, SeqPoints, weighted_projection

__all__ = ["project_cost"]


def project_cost(schedule: IterationSchedule, selection: BaseSelector | SeqPoints,
                 cost: Callable[[IterationSchedule], ArrayLike] | ArrayLike, *, method: str = "weighted",
                 context: ScheduleModel | None = None) -> float:
    """Project the run total of a cost known for every iteration (synthetic benchmarks) from the
    points and weights of ``selection`` (a fitted selector or SeqPoints): ``cost`` is
    ``cost(schedule)`` or the costs themselves, shape ``(n_iterations,)``, of which only the
    points' are used, as if measured. Compare the result with ``cost.sum()``."""
    check_method(method, "project_cost")
    values = np.asarray(cost(schedule) if callable(cost) else cost, dtype=np.float64)
    if values.shape != (len(schedule),):
        raise InputError(f"project_cost needs one cost per iteration, shape ({len(schedule)},). Got {values.shape}.")
    if isinstance(selection, SeqPoints):
        rows = seqpoint_rows(schedule, selection)
        weights = np.array([p.weight for p in selection.points], dtype=np.float64)
    else:
        rows, weights = selection.points_, selection.weights_
        if selection.n_iterations_ != len(schedule):
            raise InputError(f"The selector was fitted on {selection.n_iterations_} iterations but the schedule "
                             f"has {len(schedule)}; pass the fitted schedule.")
    if method == "weighted":
        return weighted_projection(values, rows, weights)
    model = model_for(schedule, context)
    proj = PointProjector(model, model.table.inverse[rows], weights, np.ones(rows.shape[0], dtype=bool))
    return proj.total(values[rows], method)
