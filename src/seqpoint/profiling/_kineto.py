"""The operation-category breakdown of the device time in a Kineto trace (torch-free).

A kernel (memcpy, memset) is linked by its ``correlation`` id to the runtime or driver call
that launched it; the CPU ranges around that call on its thread (time nesting) are its
ancestors. Its time goes to ``communication`` when it is an NCCL kernel, wherever it runs;
else to ``optimizer`` or ``rnn`` when an ancestor is an optimizer step or a recurrent layer's
forward; else to the category of its nearest categorised operator (not for a CUDA-graph
replay, which launches many operators' kernels at once); else to the category of its own
name (cuBLAS, CUTLASS, cuDNN, flash attention, inductor's fused kernels ...); else to
``other``. Every kernel's time lands in exactly one category.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import io
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqpoint._jsonio import MAX_TEXT_BYTES, parse_json, validate
from seqpoint.exceptions import InputError
from seqpoint.measurements import CATEGORIES
from seqpoint.profiling._categories import categorize, context_category, kernel_category

__all__ = ["KernelRow", "KinetoBreakdown", "kineto_breakdown"]

#: Event category (``cat``, any case: older Kineto wrote ``Kernel``, ``Runtime``, ``Operator``) to
#: what it is read as. An annotation (``Optimizer.step#Adam.step``) gives a context, never its own
#: category: a free-text name is no operator.
_KIND = {"kernel": "device", "gpu_memcpy": "device", "gpu_memset": "device", "memcpy": "device",
         "memset": "device", "cuda_runtime": "launch", "cuda_driver": "launch", "runtime": "launch",
         "driver": "launch", "cpu_op": "operator", "operator": "operator", "user_annotation": "annotation"}
_WHAT = "a Kineto trace, the JSON (or .json.gz) torch.profiler writes with export_chrome_trace or " \
        "tensorboard_trace_handler"


@dataclass(frozen=True)
class KernelRow:
    """One kernel ``name``'s (as the trace spells it: ``Memcpy HtoD (Pinned -> Device)`` for a copy)
    device time in one ``category`` of :data:`~seqpoint.measurements.CATEGORIES`: ``seconds`` over
    its ``count`` launches."""

    name: str
    category: str
    seconds: float
    count: int


@dataclass(frozen=True)
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
