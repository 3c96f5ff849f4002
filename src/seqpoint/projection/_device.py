"""Projection of a run onto a GPU it was not profiled on. A SeqPoint's category ``c`` (gemm, softmax, ...)
measured ``t_c`` seconds on the profiled device; the device model (``seqpoint.devices``: counted FLOPs and bytes
at each operator's precision, the fraction of peak its kind reaches, its kernels' fixed cost) times its
operators ``M_c`` there and ``M'_c`` on the target, so it takes ``t_c · M'_c / M_c`` there; the step's time
outside the categories (the host's gaps, Python) is kept as measured, the cold first steps scale like their
steady steps. The interval adds the model's own error on ratios between GPUs (``MODEL.ratio_error``, measured on
a GPU its fit did not use) on every category at once, at each end of the projection's own."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from seqpoint._signature import Signature
from seqpoint.devices import MODEL
from seqpoint.exceptions import ConfigError
from seqpoint.measurements import STEADY_TIME, Measurement, Measurements
from seqpoint.measurements.metrics import time_metric
from seqpoint.projection._match import match_measurements
from seqpoint.projection._model import ScheduleModel
from seqpoint.projection._project import Projection, project
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints

__all__ = ["DeviceProjection", "project_device"]

#: Spread statistics of a time that are counts or ratios, not seconds.
_UNITLESS = ("_n", "_repeats", "_cv")


@dataclass(frozen=True, kw_only=True)
class DeviceProjection:
    """A run profiled on one device, projected onto another."""

    profiled_on: str
    """The device the SeqPoints were profiled on (its key)."""
    device: str
    """The device projected onto."""
    metric: str
    """The projected time (``run_time_s``, else ``time_s``)."""
    profiled_total: float
    """The run's projected seconds on :attr:`profiled_on`."""
    projection: Projection
    """The run on :attr:`device`: every time total and ``breakdown_s.<category>``, the
    interval of its sampling and noise alone."""
    interval: tuple[float, float]
    """:attr:`metric`'s interval on the target, with every category's ratio off by the
    model's error on ratios either way."""
    kept_share: float
    """Share of the source's steady time outside the categories, kept as measured."""

    @property
    def total(self) -> float:
        """The run's projected seconds on the target."""
        return self.projection.totals[self.metric]

    @property
    def speedup(self) -> float:
        """Source seconds over target seconds (> 1: the target is faster)."""
        return self.profiled_total / self.total

    @property
    def speedup_interval(self) -> tuple[float, float]:
        """:attr:`speedup` over :attr:`interval`."""
        lo, hi = self.interval
        return self.profiled_total / hi, self.profiled_total / lo if lo > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        """JSON form, ``device_projection`` beside a run's ``projection``."""
        return {"profiled_on": self.profiled_on, "device": self.device, "metric": self.metric,
                "profiled_total": self.profiled_total, "total": self.total, "interval": list(self.interval),
                "speedup": self.speedup, "speedup_interval": list(self.speedup_interval),
                "kept_share": self.kept_share, "projection": self.projection.to_dict()}


def _category_ratios(modeled: Mapping[str, Mapping[str, float]], source: str, target: str) -> dict[str, float]:
    """Category → target over source modeled seconds, for categories with a source time."""
    src, tgt = modeled.get(source, {}), modeled.get(target, {})
    return {c: tgt.get(c, 0.0) / s for c, s in src.items() if s > 0}


def _scale(m: Measurement, ratios: Mapping[str, float], off: float) -> tuple[Measurement, float, float]:
    """``m`` on the target: each category's seconds times its ratio (times ``off``, for the
    interval's ends), the rest of the step kept; the step's time metrics and samples scaled
    by the step's ratio. Returns it, that ratio and the share kept."""
    step = m.metrics[STEADY_TIME]
    measured = sum(m.breakdown_s.values())
    base = max(measured, step)  # a CPU profiler's overhead can make the categories outlast the step
    moved = {c: v * ratios[c] * off for c, v in m.breakdown_s.items() if c in ratios}
    kept = 1.0 - sum(m.breakdown_s[c] for c in moved) / base
    r = kept + sum(moved.values()) / base

    def timed(name: str) -> bool:
        return name.startswith(STEADY_TIME) and not name.endswith(_UNITLESS)

    breakdown = {**m.breakdown_s, **moved}
    metrics = {k: v * r if timed(k) else v for k, v in m.metrics.items()}
    if "breakdown_total_s" in metrics:
        metrics["breakdown_total_s"] = sum(breakdown.values())
    samples = {k: [x * r for x in v] if timed(k) else v for k, v in m.samples.items()}
    return replace(m, metrics=metrics, samples=samples, breakdown_s=breakdown), r, kept


def project_device(
    schedule: IterationSchedule, seqpoints: SeqPoints, measurements: Measurements,
    modeled: Mapping[Signature, Mapping[str, Mapping[str, float]]], *, profiled_on: str, device: str,
    ratio_error: float = MODEL.ratio_error, method: str = "weighted", confidence: float = 0.95,
    context: ScheduleModel | None = None,
) -> DeviceProjection:
    """Project a run profiled on ``profiled_on`` onto ``device`` (see the module docstring). ``schedule``,
    ``seqpoints``, ``measurements``, ``method``, ``confidence`` and ``context`` are as for :func:`project`, the
    steps measured in seconds with their operation-category breakdown (``[profile] metrics`` with ``breakdown``;
    else a ConfigError). ``modeled``: per SeqPoint signature, device key → category → the device model's seconds
    of the category's operators (``seqpoint.profiling.category_models``); ``ratio_error``: the relative error of
    a modeled ratio between two devices, the interval's band."""
    pairs = [(p.weight, m) for p, m in zip(seqpoints.points, match_measurements(seqpoints, measurements),
                                           strict=True) if m.ok]
    if not pairs or any(STEADY_TIME not in m.metrics for _, m in pairs):
        raise ConfigError("Projecting onto another device scales measured seconds: profile with a clock timer "
                          "([profile] timer = \"wall\" or \"cuda\"), not instructions.")
    if not all(m.breakdown_s for _, m in pairs):
        raise ConfigError("Projecting onto another device needs each SeqPoint's time per operation category: "
                          "add \"breakdown\" to [profile] metrics.")
    ratios = [_category_ratios(modeled[m.signature], profiled_on, device) for _, m in pairs]
    # each point's share of the run's steady time: what the window's and the kept share's averages weigh by
    w = np.array([wt * m.metrics[STEADY_TIME] for wt, m in pairs])
    w /= w.sum()

    def on_target(end: float) -> tuple[Projection, float]:
        scaled = [_scale(m, r, end) for (_, m), r in zip(pairs, ratios, strict=True)]
        meas = replace(measurements, measurements=tuple(s[0] for s in scaled))
        if measurements.window is not None:  # the cold-step window's steps, by the points' mean ratio
            r = float(np.dot(w, [s[1] for s in scaled]))
            meas = replace(meas, window=replace(measurements.window,
                                                times_s=tuple(t * r for t in measurements.window.times_s)))
        return project(schedule, seqpoints, meas, **kwargs), float(np.dot(w, [s[2] for s in scaled]))

    kwargs: dict[str, Any] = {"method": method, "confidence": confidence, "context": context}
    src = project(schedule, seqpoints, measurements, **kwargs)
    metric = time_metric(src.totals)
    mid, kept = on_target(1.0)
    low, high = on_target(1.0 - ratio_error)[0], on_target(1.0 + ratio_error)[0]
    interval = (min(low.interval[metric][0], mid.interval[metric][0]),
                max(high.interval[metric][1], mid.interval[metric][1]))
    return DeviceProjection(profiled_on=profiled_on, device=device, metric=metric, profiled_total=src.totals[metric],
                            projection=mid, interval=interval, kept_share=kept)
