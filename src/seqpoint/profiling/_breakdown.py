"""Where a step's time goes: torch.profiler attribution of operators (on a CPU) or kernels (on
CUDA, through the Kineto trace reader) to the categories of
:data:`~seqpoint.measurements.CATEGORIES`, and the bytes a step keeps resident."""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from seqpoint.measurements import CATEGORIES
from seqpoint.profiling._categories import categorize, context_category
from seqpoint.profiling._kineto import kineto_breakdown
from seqpoint.profiling._startup import native_stderr_silenced
from seqpoint.workloads import Trains, Workload

if TYPE_CHECKING:
    import torch
    from torch.autograd.profiler_util import FunctionEvent

__all__ = ["profile_breakdown", "state_bytes"]

def state_bytes(workload: Workload, batch: object) -> int:
    """Bytes of parameters, optimizer state and the batch (the step's resident memory), each
    storage once (tied weights, views)."""
    import torch
    from torch.utils._pytree import tree_leaves

    seen: set[int] = set()
    total = 0

    def add(t: object) -> None:
        nonlocal total
        if isinstance(t, torch.Tensor) and t.device.type != "meta":
            st = t.untyped_storage()
            if st.data_ptr() not in seen:
                seen.add(st.data_ptr())
                total += st.nbytes()

    if isinstance(workload, Trains):
        for t in (*workload.model.parameters(), *workload.model.buffers()):
            add(t)
        for state in workload.optimizer.state.values():
            for t in tree_leaves(state):
                add(t)
    for t in tree_leaves(batch):
        add(t)
    return total


def _context(ev: FunctionEvent, cache: dict[int, str | None]) -> str | None:
    """``optimizer`` or ``rnn`` when an enclosing range owns the operator, else None."""
    key = id(ev)
    if key in cache:
        return cache[key]
    found: str | None = None
    p = ev.cpu_parent
    while p is not None and found is None:
        found = context_category(p.name)
        p = p.cpu_parent
    cache[key] = found
    return found


#: Events whose self time is attributed: operators, autograd, optimizer.
_ATTRIBUTED = ("aten::", "autograd::engine::evaluate_function:", "Optimizer.")


def run_profiled(workload: Workload, batch: object, steps: int, *, on_cuda: bool,
                 metadata: Mapping[str, object] | None = None, **options: bool) -> torch.profiler.profile:
    """The torch.profiler (CPU activity, and CUDA's ``on_cuda``; ``options`` such as
    ``profile_memory``) of ``steps`` steps of ``workload``, stopped even when a step raises;
    ``metadata`` joins the trace as JSON values."""
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if on_cuda else [])], **options)
    # kineto prints a "USDT: ... profiler_start/stop" line to the process's stderr at
    # every start and stop; silence only those two calls, not the profiled steps.
    with native_stderr_silenced():
        prof.start()
    for key, value in (metadata or {}).items():
        # Metadata joins the live Kineto session, so it is added between start and stop.
        prof.add_metadata_json(key, json.dumps(value))
    try:
        for _ in range(steps):
            workload.step(batch)
    finally:
        with native_stderr_silenced():
            prof.stop()
    return prof


def profile_breakdown(
    workload: Workload, batch: object, device: torch.device, steps: int, with_memory: bool, *,
    chrome_trace: Path | None = None, trace_metadata: Mapping[str, object] | None = None,
) -> tuple[dict[str, float], float, int]:
    """``(seconds per category, total seconds, peak bytes)`` per step of ``steps`` steps of
    ``batch`` under torch.profiler (categories without time left out).

    On a CPU each operator's self CPU time goes to its category; operators inside an
    optimizer step go to ``optimizer`` and those inside a recurrent layer's forward to
    ``rnn``. On ``cuda`` every kernel's time goes to a category, by the rules of
    :func:`~seqpoint.profiling.kineto_breakdown` on the steps' Kineto trace. Host peak memory
    (``with_memory``) is the high-water mark of the profiler's allocation events.
    ``chrome_trace`` also exports the steps as a Kineto trace (input shapes recorded) with
    ``trace_metadata`` as its top-level keys.
    """
    from torch.autograd import DeviceType

    on_cuda = device.type == "cuda"
    prof = run_profiled(workload, batch, steps, on_cuda=on_cuda, metadata=trace_metadata,
                        profile_memory=with_memory, record_shapes=chrome_trace is not None)
    if chrome_trace is not None:
        chrome_trace.parent.mkdir(parents=True, exist_ok=True)
        prof.export_chrome_trace(str(chrome_trace))
    per_cat = dict.fromkeys(CATEGORIES, 0.0)
    if on_cuda:  # one reader of kernels: a user's trace and a profiled step are attributed alike
        with tempfile.TemporaryDirectory() as tmp:
            path = chrome_trace or Path(tmp) / "steps.json"
            if chrome_trace is None:
                prof.export_chrome_trace(str(path))
            per_cat.update({c: s / steps for c, s in kineto_breakdown(path).categories.items()})
    mem_events: list[tuple[int, int]] = []
    context_cache: dict[int, str | None] = {}
    for ev in prof.events() if with_memory or not on_cuda else ():
        if ev.name == "[memory]":
            mem_events.append((int(ev.time_range.start), int(ev.cpu_memory_usage + ev.device_memory_usage)))
            continue
        if on_cuda or ev.device_type != DeviceType.CPU or not ev.name.startswith(_ATTRIBUTED):
            continue
        t_us = ev.self_cpu_time_total
        if t_us <= 0:
            continue
        cat = _context(ev, context_cache) or categorize(ev.name)
        per_cat[cat] += t_us * 1e-6 / steps
    peak = max(itertools.accumulate((delta for _, delta in sorted(mem_events)), initial=0))
    return {k: v for k, v in per_cat.items() if v > 0}, sum(per_cat.values()), peak
