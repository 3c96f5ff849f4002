"""Where a step's time goes, by the categories of :data:`~seqpoint.measurements.CATEGORIES`:
torch.profiler attribution of a point's operators on a CPU (:func:`profile_breakdown`), and of
the device time in a Kineto trace (:func:`kineto_breakdown`, torch-free; also a CUDA point's
steps); and the bytes a step keeps resident.

In a Kineto trace a kernel (memcpy, memset) is linked by its ``correlation`` id to the runtime
or driver call that launched it; the CPU ranges around that call on its thread (time nesting)
are its ancestors. Its time goes to ``communication`` when it is an NCCL kernel, wherever it
runs; else to ``optimizer`` or ``rnn`` when an ancestor is an optimizer step or a recurrent
layer's forward; else to the category of its nearest categorised operator (not for a CUDA-graph
replay, which launches many operators' kernels at once); else to the category of its own name
(cuBLAS, CUTLASS, cuDNN, flash attention, inductor's fused kernels ...); else to ``other``.
Every kernel's time lands in exactly one category.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import io
import itertools
import json
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seqpoint._jsonio import MAX_TEXT_BYTES, parse_json, validate
from seqpoint.exceptions import InputError
from seqpoint.measurements import CATEGORIES
from seqpoint.profiling._categories import categorize, context_category, kernel_category
from seqpoint.profiling._startup import native_stderr_silenced
from seqpoint.workloads import Trains, Workload

if TYPE_CHECKING:
    import torch
    from torch.autograd.profiler_util import FunctionEvent

__all__ = ["KernelRow", "KinetoBreakdown", "kineto_breakdown", "profile_breakdown", "state_bytes"]

#: Event category (``cat``, any case: older Kineto wrote ``Kernel``, ``Runtime``, ``Operator``) to
#: what it is read as. An annotation (``Optimizer.step#Adam.step``) gives a context, never its own
#: category: a free-text name is no operator.
_KIND = {"kernel": "device", "gpu_memcpy": "device", "gpu_memset": "device", "memcpy": "device",
         "memset": "device", "cuda_runtime": "launch", "cuda_driver": "launch", "runtime": "launch",
         "driver": "launch", "cpu_op": "operator", "operator": "operator", "user_annotation": "annotation"}
_WHAT = "a Kineto trace, the JSON (or .json.gz) torch.profiler writes with export_chrome_trace or " \
        "tensorboard_trace_handler"


@dataclasses.dataclass(frozen=True)
class KernelRow:
    """One kernel ``name``'s (as the trace spells it: ``Memcpy HtoD (Pinned -> Device)`` for a copy)
    device time in one ``category`` of :data:`~seqpoint.measurements.CATEGORIES`: ``seconds`` over
    its ``count`` launches."""

    name: str
    category: str
    seconds: float
    count: int


@dataclasses.dataclass(frozen=True)
class KinetoBreakdown:
    """A trace's device time by operation category (:func:`kineto_breakdown`): ``total_s``, every
    kernel's, memcpy's and memset's duration summed, seconds (kernels that overlap on two streams
    count twice); ``categories``, category to seconds in :data:`~seqpoint.measurements.CATEGORIES`
    order, those without time left out (they sum to ``total_s``); ``kernels``, one row per kernel
    name and category, most time first."""

    total_s: float
    categories: dict[str, float]
    kernels: tuple[KernelRow, ...]

    def to_dict(self) -> dict[str, object]:
        """What ``seqpoint breakdown --json`` prints."""
        return {"total_s": self.total_s, "categories": dict(self.categories),
                "kernels": [dataclasses.asdict(k) for k in self.kernels]}


def _read(path: Path) -> Any:
    """The parsed JSON of a trace file, gunzipped when it is gzip-compressed."""
    if not path.is_file():
        raise InputError(f"{path} does not exist or is not a file; give {_WHAT}.")
    if path.stat().st_size > MAX_TEXT_BYTES:
        raise InputError(f"{path}: larger than {MAX_TEXT_BYTES >> 20} MiB; profile fewer steps.")
    data = path.read_bytes()
    if data.startswith(b"\x1f\x8b"):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
                data = fh.read(MAX_TEXT_BYTES + 1)
        except (OSError, EOFError) as exc:
            raise InputError(f"{path}: cannot be decompressed ({exc}); the file is truncated or corrupt: "
                             "export the trace again.") from None
    if len(data) > MAX_TEXT_BYTES:
        raise InputError(f"{path}: larger than {MAX_TEXT_BYTES >> 20} MiB; profile fewer steps.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not JSON text; give {_WHAT}.") from None
    return parse_json(text, source=str(path), fix=f"give {_WHAT}")


def _events(data: Any, source: str) -> dict[str, list[Any]]:
    """The trace's kernels, launches, operators and annotations (validated), by kind."""
    from seqpoint.profiling._kineto_schema import KinetoEvents

    raw = data.get("traceEvents") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise InputError(f"{source}: not a Kineto trace (no 'traceEvents' list); give {_WHAT}.")
    picked = {i: e for i, e in enumerate(raw) if isinstance(e, dict) and e.get("ph", "X") == "X"
              and str(e.get("cat", "")).lower() in _KIND}
    valid = validate(KinetoEvents, picked, source=f"{source}: traceEvents", fix=f"give {_WHAT}").root
    out: dict[str, list[Any]] = {kind: [] for kind in _KIND.values()}
    for i, ev in valid.items():
        out[_KIND[str(picked[i]["cat"]).lower()]].append(ev)
    if not out["device"]:
        raise InputError(f"{source}: no GPU kernels in the trace (a CPU-only profile?); profile with "
                         "ProfilerActivity.CUDA among the activities.")
    return out


def _launch_categories(events: dict[str, list[Any]]) -> dict[int, str]:
    """Correlation id of each launch to the category its CPU ancestors give, where they give one."""
    category = functools.cache(categorize)
    threads: dict[tuple[object, object], list[tuple[float, int, float, str, int]]] = defaultdict(list)
    for kind in ("operator", "annotation"):
        for ev in events[kind]:
            threads[ev.pid, ev.tid].append((ev.ts, 0, ev.ts + ev.dur, ev.name, kind == "operator"))
    for ev in events["launch"]:
        if ev.args.correlation is not None:
            threads[ev.pid, ev.tid].append((ev.ts, 1, ev.ts + ev.dur, ev.name, ev.args.correlation))
    out: dict[int, str] = {}
    for items in threads.values():
        # At one time stamp: ranges before launches, an outer range before an inner one.
        items.sort(key=lambda it: (it[0], it[1], -it[2]))
        # Open ranges: end, the nearest context (optimizer, rnn), the nearest operator's category.
        stack: list[tuple[float, str | None, str | None]] = []
        for ts, is_launch, end, name, tag in items:
            while stack and stack[-1][0] <= ts:
                stack.pop()
            _, context, nearest = stack[-1] if stack else (0.0, None, None)
            if not is_launch:
                own = category(name) if tag else "other"
                stack.append((end, context_category(name) or context, nearest if own == "other" else own))
            elif found := context or (None if name.startswith("cudaGraphLaunch") else nearest):
                out[tag] = found
    return out


def kineto_breakdown(path: str | Path) -> KinetoBreakdown:
    """Seconds per category of :data:`~seqpoint.measurements.CATEGORIES` and per kernel of the
    device time in the trace at ``path`` (torch.profiler's ``export_chrome_trace`` or
    ``tensorboard_trace_handler``, JSON or gzip-compressed JSON, with CUDA activity); how each
    kernel is attributed is in this module's docstring. :class:`InputError` when the file is
    missing, not JSON, not a Kineto trace, or holds no GPU kernel."""
    path = Path(path)
    events = _events(_read(path), str(path))
    launched = _launch_categories(events)
    by_name = functools.cache(kernel_category)
    rows: dict[tuple[str, str], list[float]] = {}
    for ev in events["device"]:
        own = by_name(ev.name)
        cat = own if own == "communication" else launched.get(ev.args.correlation) or own
        row = rows.setdefault((ev.name, cat), [0.0, 0])
        row[0] += ev.dur * 1e-6
        row[1] += 1
    per_cat = dict.fromkeys(CATEGORIES, 0.0)
    for (_, cat), (sec, _) in rows.items():
        per_cat[cat] += sec
    kernels = sorted((KernelRow(name, cat, sec, int(n)) for (name, cat), (sec, n) in rows.items()),
                     key=lambda k: (-k.seconds, k.name))
    return KinetoBreakdown(total_s=sum(k.seconds for k in kernels),
                           categories={c: s for c, s in per_cat.items() if s > 0}, kernels=tuple(kernels))


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


def ancestors(ev: FunctionEvent) -> Iterator[FunctionEvent]:
    """The CPU ranges that enclose a profiled event, innermost first."""
    p = ev.cpu_parent
    while p is not None:
        yield p
        p = p.cpu_parent


#: Events whose self time is attributed: operators, autograd, optimizer.
_ATTRIBUTED = ("aten::", "autograd::engine::evaluate_function:", "Optimizer.")


def run_profiled(workload: Workload, batch: object, steps: int, *, on_cuda: bool, profile_memory: bool = False,
                 record_shapes: bool = False, metadata: Mapping[str, object] | None = None) -> torch.profiler.profile:
    """The torch.profiler (CPU activity, and CUDA's ``on_cuda``) of ``steps`` steps of ``workload``,
    stopped even when a step raises; ``metadata`` joins the trace as JSON values."""
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if on_cuda else [])],
                   profile_memory=profile_memory, record_shapes=record_shapes)
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

    On a CPU each operator's self CPU time goes to its category; operators inside an optimizer step
    go to ``optimizer`` and those inside a recurrent layer's forward to ``rnn``. On ``cuda`` every
    kernel's time goes to a category, by the rules of :func:`~seqpoint.profiling.kineto_breakdown`
    on the steps' Kineto trace. Host peak memory (``with_memory``) is the high-water mark of the
    profiler's allocation events. ``chrome_trace`` also exports the steps as a Kineto trace (input
    shapes recorded) with ``trace_metadata`` as its top-level keys.
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
    for ev in prof.events() if with_memory or not on_cuda else ():
        if ev.name == "[memory]":
            mem_events.append((int(ev.time_range.start), int(ev.cpu_memory_usage + ev.device_memory_usage)))
            continue
        if on_cuda or ev.device_type != DeviceType.CPU or not ev.name.startswith(_ATTRIBUTED):
            continue
        t_us = ev.self_cpu_time_total
        if t_us <= 0:
            continue
        cat = next(filter(None, (context_category(p.name) for p in ancestors(ev))), None) or categorize(ev.name)
        per_cat[cat] += t_us * 1e-6 / steps
    peak = max(itertools.accumulate((delta for _, delta in sorted(mem_events)), initial=0))
    return {k: v for k, v in per_cat.items() if v > 0}, sum(per_cat.values()), peak
