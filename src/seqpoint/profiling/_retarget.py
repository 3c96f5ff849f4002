"""Each operation category's modeled time on two devices, per SeqPoint: what
``seqpoint.projection.project_device`` scales measured category times by."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from seqpoint._signature import Signature
from seqpoint.devices import Target
from seqpoint.profiling._counting import count_step
from seqpoint.profiling._state import WorkloadState
from seqpoint.workloads import Workload

__all__ = ["category_models"]


def category_models(workload: Workload, signatures: Iterable[Signature], devices: Mapping[str, Target], *,
                    state: WorkloadState | None = None) -> dict[Signature, dict[str, dict[str, float]]]:
    """Signature → device → category → seconds: the device model's time of the category's
    operators in one counted step of ``workload``, on each of ``devices`` (``device_targets(...,
    model=True)``)."""
    out: dict[Signature, dict[str, dict[str, float]]] = {}
    for sig in signatures:
        cost = count_step(workload, tuple(int(v) for v in sig), models=devices,
                          split=[f"model_{d}" for d in devices], state=state)
        per: dict[str, dict[str, float]] = {d: {} for d in devices}
        for key, seconds in cost.category_times.items():
            stem, category = key.split("/", 1)
            per[stem.removeprefix("model_")][category] = seconds
        out[tuple(sig)] = per
    return out
