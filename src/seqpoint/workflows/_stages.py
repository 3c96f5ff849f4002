"""The stages of a run that need only their config section: lengths, schedule, points, and the
model cost proxy (:class:`~seqpoint.workflows.Campaign` composes them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

import seqpoint.workflows._sections as sections
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.measurements import Measurements
from seqpoint.profiling import WorkloadState
from seqpoint.schedule import IterationSchedule, RunTrace
from seqpoint.selection import BaseSelector, CostProxy, SeqPoints
from seqpoint.traces import Lengths
from seqpoint.workflows._config import RunConfig
from seqpoint.workloads import BatchShape, TorchWorkload, Workload, takes_batch_shape

__all__ = ["batch_shapes", "build_schedule", "choose_points", "model_cost", "read_run_schedule",
           "signature_shapes", "validation_schedule"]


def _load_lengths(sec: sections.LengthsSection) -> Lengths:
    """Read the lengths named by ``[lengths]``, optionally a seeded random subset."""
    from seqpoint.traces import read_lengths

    if sec.source is None:
        raise ConfigError("The config names no lengths: set [lengths] source = \"path/to/lengths\" (or "
                          "\"bundled:NAME\"), or [batching] schedule = \"schedule.csv\" for a schedule of your own; "
                          "configs/ has examples.")
    lengths = read_lengths(sec.source, format=sec.format, column=sec.column, tgt=sec.tgt, **sec.params)
    if sec.max_samples is not None and sec.max_samples < len(lengths):
        rng = np.random.default_rng(sec.seed)
        idx = np.sort(rng.choice(len(lengths), size=sec.max_samples, replace=False))
        lengths = lengths.take(idx)
    return lengths


def build_schedule(lengths: sections.LengthsSection, batching: sections.BatchingSection) -> IterationSchedule:
    """Replay ``[batching]`` over the lengths ``[lengths]`` names (every rank's batches when
    ``world_size`` > 1; one rank's when ``rank`` is set); its ``meta`` has the lengths'
    ``unit`` and ``n_samples``."""
    from seqpoint.batching import replay

    schedule = replay(_load_lengths(lengths), batching.policy, epochs=batching.epochs, seed=batching.seed,
                      world_size=batching.world_size, shard=batching.shard, **batching.params)
    return schedule if batching.rank is None else schedule.for_rank(batching.rank)


def read_run_schedule(run: IterationSchedule | RunTrace | str | Path) -> IterationSchedule:
    """The run as a schedule: a schedule, a run trace's micro-batches, or a file of either (a
    file that is neither gets the schedule's message, which says what a schedule needs)."""
    from seqpoint.schedule import read_schedule, read_trace

    if isinstance(run, IterationSchedule):
        return run
    if isinstance(run, RunTrace):
        return run.to_schedule()
    try:
        return read_schedule(run)
    except InputError as as_schedule:
        try:
            return read_trace(run).to_schedule()
        except InputError:
            raise as_schedule from None


def validation_schedule(cfg: RunConfig, schedule: IterationSchedule, *, renumber: bool = True) -> IterationSchedule:
    """The part of ``schedule`` that ``[validation]`` executes in full, re-numbered so it is a
    schedule of its own (SeqPoints index into it) unless ``renumber`` is False."""
    sub = schedule
    if cfg.validation.epochs is not None:
        sub = sub.epochs(cfg.validation.epochs)
    if cfg.validation.max_iterations is not None:
        sub = sub.head(cfg.validation.max_iterations)
    if not renumber:
        return sub
    cols = sub.columns()
    cols["iteration"] = np.arange(len(sub), dtype=np.int64)
    return IterationSchedule(**cols, meta={**sub.meta, "validation_subset": True})


def choose_points(sec: sections.SelectionSection, schedule: IterationSchedule, *, method: str | None = None,
                  n_points: int | None = None, cost: CostProxy | None = None) -> tuple[BaseSelector, SeqPoints]:
    """Fit the selector of ``[selection]`` (or ``method`` at ``n_points``) on ``schedule``;
    ``cost`` replaces the seqpoint selector's cost proxy (the model proxy)."""
    from seqpoint.selection import make_selector

    name = method or sec.method
    params = sec.selector_params(name, n_points)
    if cost is not None and name == "seqpoint":
        params["cost"] = cost
    selector = make_selector(name, **params).fit(schedule)
    return selector, selector.to_seqpoints(schedule)


def batch_shapes(workload: Workload, schedule: IterationSchedule, rows: Sequence[int]) -> list[BatchShape] | None:
    """For a workload that takes real lengths: the batches of ``schedule``'s ``rows``, so a
    step runs as it ran (a packed row's documents, a padded batch's masks); else None."""
    lengths = schedule.rows
    if lengths is None or not takes_batch_shape(workload):
        return None
    name = str(getattr(workload, "name", "workload"))
    sigs = schedule.signature_matrix()[list(rows)].tolist()
    return [BatchShape.of(tuple(int(v) for v in sig), *lengths.row(r), row_of=lengths.packed_row_of(r),
                          workload=name) for sig, r in zip(sigs, rows, strict=True)]


def signature_shapes(workload: Workload, schedule: IterationSchedule) -> list[BatchShape] | None:
    """:func:`batch_shapes` of every unique signature's first iteration
    (``schedule.unique_signatures()`` order), so its exact FLOPs count the step as it runs."""
    first = np.unique(np.asarray(schedule.unique_signatures()[2]), return_index=True)[1]
    return batch_shapes(workload, schedule, [int(i) for i in first])


def model_cost(
    sec: sections.SelectionSection, schedule: IterationSchedule, workload: Workload, *,
    measure: Callable[[list[tuple[int, ...]]], Measurements] | None = None, timer: str = "wall",
    state: WorkloadState | None = None,
) -> CostProxy | None:
    """The cost proxy of ``[selection] proxy`` where the workload is known, carrying its exact
    FLOPs and bytes per signature as basis components (the bound and the calibrated weights
    then cover their run totals). ``auto`` groups on ``attention`` (None, the formula alone,
    for a user workload, which would be counted on one real step per signature); ``model``
    on every signature's roofline time on ``proxy_device``; ``model+pilot`` rescales that
    along the range by the measured step times of ``pilot_points`` signatures (``measure``,
    the campaign's, in ``timer``'s unit); ``state`` keeps the counts (a profiler's)."""
    from seqpoint.devices import device_key
    from seqpoint.profiling import device_targets, exact_signature_costs
    from seqpoint.selection import COST_MODELS, PilotTable, SignatureCosts

    if sec.proxy == "auto" and not isinstance(workload, TorchWorkload):
        return None
    sigs, _, inverse = schedule.unique_signatures()
    proxy_device = sec.proxy_device or "cpu"  # the campaign resolves None to the workload's device
    devices = None if sec.proxy == "auto" else device_targets(workload, [proxy_device])
    per_sig, *_ = exact_signature_costs(workload, np.asarray(sigs, dtype=np.int64), devices=devices,
                                        shapes=signature_shapes(workload, schedule), state=state)
    rows = [tuple(int(v) for v in r) for r in sigs.tolist()]
    exact = {m: dict(zip(rows, per_sig[m].tolist(), strict=True)) for m in ("flops", "bytes")}
    if sec.proxy == "auto":
        time = COST_MODELS.get("attention")()(schedule.take(np.unique(inverse, return_index=True)[1]))
        name = "attention + exact flops, bytes"
    else:
        time = per_sig[f"roofline_{device_key(proxy_device)}_s"]
        name = f"model(roofline {proxy_device}) + exact flops, bytes"
    model = SignatureCosts(costs=dict(zip(rows, np.asarray(time).tolist(), strict=True)), name=name, components=exact)
    if sec.proxy != "model+pilot" or measure is None:
        return model
    from seqpoint.measurements.metrics import step_metric

    # Pilot signatures at evenly spaced quantiles of the model cost cover its range.
    order = np.argsort(time, kind="stable")
    picks = np.unique(np.round(np.linspace(0, len(order) - 1, min(sec.pilot_points, len(order)))))
    ms = measure([rows[int(order[int(i)])] for i in picks])
    step = step_metric(timer)  # seconds, or instructions: either ranks the shapes' costs
    timed = {m.signature: m.metrics[step] for m in ms.measurements if m.ok and m.metrics.get(step, 0) > 0}
    if not timed:
        return model
    return PilotTable(costs=timed, base=model)
