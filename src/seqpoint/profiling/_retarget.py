"""Each operation category's roofline time on two devices, per SeqPoint: what
``seqpoint.projection.project_device`` scales measured category times by."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from seqpoint.profiling._counting import Peak, count_step
from seqpoint.workloads import Signature, Workload

__all__ = ["category_rooflines"]


def category_rooflines(workload: Workload, signatures: Iterable[Signature],
                       devices: Mapping[str, Peak]) -> dict[Signature, dict[str, dict[str, float]]]:
    """Signature → device → category → seconds: the sum over the category's operators of
    ``max(FLOPs / peak, bytes / bandwidth)`` in one counted step of ``workload``, for each
    device of ``devices`` (key → ``(peak FLOP/s, bytes/s)`` at the workload's dtype)."""
    out: dict[Signature, dict[str, dict[str, float]]] = {}
    for sig in signatures:
        cost = count_step(workload, tuple(int(v) for v in sig), devices=devices, split=devices)
        per: dict[str, dict[str, float]] = {d: {} for d in devices}
        for key, seconds in cost.category_roofline.items():
            device, category = key.split("/", 1)
            per[device][category] = seconds
        out[tuple(sig)] = per
    return out
