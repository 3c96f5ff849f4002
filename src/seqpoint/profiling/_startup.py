"""Process start-up of a workload: the warm-up that absorbs one-time costs before the first
measured point, what each workload object has run in this process, oneDNN's primitive counts,
and the file-descriptor redirection for native libraries that write past ``sys.stdout``/
``sys.stderr`` (oneDNN's verbose log on fd 1, kineto's line at every profiler start and stop on fd 2)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import statistics
import sys
import warnings
from collections.abc import Iterable, Iterator, Sequence

from seqpoint._signature import Signature
from seqpoint.exceptions import SeqPointWarning
from seqpoint.measurements.metrics import (
    ONEDNN_CACHE_CAPACITY,
    ONEDNN_NEW,
    ONEDNN_SHARED,
    shapes_held,
)
from seqpoint.profiling._failures import guarded
from seqpoint.profiling._state import StartupState, WorkloadState
from seqpoint.workloads import Workload, describe

__all__ = ["DEFAULT_BLOCK", "STARTUP_STEPS", "campaign_decoy", "check_recompiles", "compile_clock", "compile_summary",
           "fd_redirected", "interleave_block", "native_stderr_silenced", "onednn_cache_capacity", "onednn_metrics",
           "recompiled", "startup_state"]

#: Steps of the start-up shape before the first measured point.
_STARTUP_STEPS = 3
#: Steps a fresh process runs before its first measured point, at most (and a oneDNN probe).
STARTUP_STEPS = _STARTUP_STEPS + 1


def startup_state(workload: Workload, kept: WorkloadState, decoy: Sequence[int] | None = None,
                  points: Iterable[Sequence[int]] = ()) -> StartupState:
    """The start-up state of ``workload`` in ``kept`` (its profiler's), running the start-up
    the first time: a few steps of ``decoy`` (default: its ``warmup_signature``) absorb the
    process's one-time costs, and one step of a second shape, none of ``points``, counts
    oneDNN's primitives."""
    if kept.startup is not None:
        return kept.startup
    state = kept.startup = StartupState()
    decoy = decoy if decoy is not None else describe(workload).warmup_signature
    if decoy is None:
        return state
    start = tuple(int(v) for v in decoy)

    def steps() -> None:
        batch = workload.make_batch(start)
        for _ in range(_STARTUP_STEPS):
            workload.step(batch)
        state.compiled = compile_clock()
        probe = _probe_signature(start, {tuple(p[:3]) for p in points})
        if probe is not None:
            state.primitives = count_onednn_primitives(workload, probe)

    guarded(workload, start, steps)  # a decoy that fails (OOM) leaves the points to report it
    return state


def campaign_decoy(signatures: Sequence[Sequence[int]]) -> Signature | None:
    """The start-up shape of a campaign: ``(batch_size, seq_len - 1, tgt_len)`` of its point
    with the most padded tokens (``seq_len + 1`` when taken), never a point; None for none.

    A real run grows its allocator and thread pools once, to its largest batches; after a
    small decoy ``bert:tiny``'s cold steps cost up to 1.9x their steady state, after this 1.04x.
    """
    sigs = [tuple(int(v) for v in s) for s in signatures]
    if not sigs:
        return None
    taken = {s[:3] for s in sigs}
    b, length, tgt = (*max(sigs, key=lambda s: s[0] * (s[1] + (s[2] if len(s) > 2 else 0))), 0)[:3]
    for cand in (length - 1, length + 1, length - 2, length + 2):
        if cand >= 1 and (b, cand, tgt) not in taken:
            return (b, cand, tgt)
    return None


def _probe_signature(decoy: Signature, taken: set[Signature]) -> Signature | None:
    """A second start-up shape, every length about 20% below ``decoy``'s (far enough that
    strided convolutions' outputs change too), never a point."""
    b, length, tgt = (*decoy, 0)[:3]
    for cut in (0.8, 0.75, 0.7, 0.65, 0.6):
        cand = (b, max(1, round(cut * length)), round(cut * tgt))
        if cand[1] < length and cand not in taken:
            return cand
    return None


def onednn_cache_capacity() -> int:
    """Entries of oneDNN's primitive cache in this process's environment (LRU, per process)."""
    for var in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "DNNL_PRIMITIVE_CACHE_CAPACITY"):
        value = os.environ.get(var, "").strip()
        if value.isdigit():
            return int(value)
    return 1024  # oneDNN's default


def onednn_metrics(primitives: tuple[int, int] | None, capacity: int) -> dict[str, float]:
    """The oneDNN counts a measurement keeps (none when not counted): what a projection needs
    to tell which steps of a run re-create primitives."""
    if primitives is None:
        return {}
    return {ONEDNN_NEW: float(primitives[0]), ONEDNN_SHARED: float(primitives[1]),
            ONEDNN_CACHE_CAPACITY: float(capacity)}


#: Points interleaved together when oneDNN's primitive counts are unknown.
DEFAULT_BLOCK = 16


def interleave_block(primitives: tuple[int, int] | None, capacity: int | None) -> int:
    """Points in one round-robin block: as many shapes as oneDNN's LRU primitive cache keeps
    at once, at least 1; :data:`DEFAULT_BLOCK` when unknown, unlimited for none per shape."""
    if primitives is None or not capacity:
        return DEFAULT_BLOCK
    per_shape, shared = primitives
    if per_shape <= 0:
        return 1 << 30
    return max(1, shapes_held(per_shape, shared, capacity))


@contextlib.contextmanager
def fd_redirected(fd: int, target: int) -> Iterator[bool]:
    """Point file descriptor ``fd`` at ``target``, Python's and C's buffers flushed on the way
    in and out; yields False (redirecting nothing) when the process has no ``fd``."""

    def flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        # fflush(NULL): oneDNN prints with C stdio, fully buffered when fd 1 is a file.
        with contextlib.suppress(OSError, AttributeError):  # no C library to call
            ctypes.CDLL(None).fflush(None)

    flush()
    try:
        saved = os.dup(fd)
    except OSError:
        yield False
        return
    try:
        os.dup2(target, fd)
        yield True
    finally:
        flush()
        os.dup2(saved, fd)
        os.close(saved)


@contextlib.contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null while the block runs."""
    with open(os.devnull, "wb") as devnull, fd_redirected(2, devnull.fileno()):
        yield


def count_onednn_primitives(workload: Workload, signature: Signature) -> tuple[int, int] | None:
    """oneDNN primitives one step of a never-seen shape creates, and those it reuses, from
    oneDNN's verbose log of one untimed step on file descriptor 1 (``create:cache_miss`` and
    ``create:cache_hit``). None off the CPU or without oneDNN."""
    import tempfile

    import torch

    if describe(workload).device_type != "cpu" or not torch.backends.mkldnn.is_available():
        return None
    batch = workload.make_batch(signature)
    with tempfile.TemporaryFile() as log:
        with fd_redirected(1, log.fileno()) as captured:
            if not captured:
                return None
            with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON_CREATION):
                workload.step(batch)
        log.seek(0)
        text = log.read().decode(errors="replace")
    return text.count("create:cache_miss"), text.count("create:cache_hit")


def compile_clock() -> tuple[float, int]:
    """torch.compile's seconds so far in this process (torch's own ``total_wall_time``: dynamo's
    frames and the backward graphs compiled at their first backward) and the graphs it
    compiled; ``(0.0, 0)`` where nothing imported dynamo."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return 0.0, 0
    return float(utils.calculate_time_spent().get("total_wall_time", 0.0)), int(utils.counters["stats"]["unique_graphs"])


def check_recompiles(workload: Workload, shapes: int) -> None:
    """Warn when a ``compile_dynamic = False`` workload meets more shapes in one process than
    dynamo compiles graphs for (``recompile_limit``): past it, the steps run eager, so the
    later points would be timed as another program than a compiled run's."""
    if getattr(getattr(workload, "config", None), "compile_dynamic", None) is not False:
        return
    import torch._dynamo

    limit = getattr(torch._dynamo.config, "recompile_limit", None) or torch._dynamo.config.cache_size_limit
    if shapes + 1 > limit:  # and the start-up's shape
        warnings.warn(f"{describe(workload).name} compiles each shape statically (compile_dynamic = false), and a "
                      f"process meets {shapes + 1} shapes, more than torch._dynamo.config.recompile_limit = {limit}: "
                      "the shapes past it run eager. Set compile_dynamic = true (or none), or raise the limit.",
                      SeqPointWarning, stacklevel=3)


def recompiled(kept: WorkloadState, since: tuple[float, int] = (0.0, 0)) -> tuple[float, int] | None:
    """torch.compile's seconds and graphs in this process after ``since`` (a ``compile_clock``
    reading) and after the start-up shape (of the workload whose state is ``kept``) compiled:
    what a run pays after its own start-up (recompiles until dynamic shapes cover its shapes).
    None where nothing compiled after ``since`` (an eager workload, whatever else this process
    compiled before)."""
    now = compile_clock()
    if now[1] <= since[1]:
        return None
    base = max(since, kept.startup.compiled if kept.startup is not None else (0.0, 0))
    return now[0] - base[0], now[1] - base[1]  # both readings only grow: the later one is the base


def compile_summary(per_process: Sequence[tuple[float, int] | None]) -> dict[str, float]:
    """What torch.compile cost the processes that measured a campaign after their start-up,
    from each one's ``recompiled``: the median ``seconds`` and ``graphs``, the ``processes``
    and the seconds' ``spread_s``; empty where none compiled (an eager workload)."""
    compiled = [p for p in per_process if p is not None]
    if not compiled:
        return {}
    seconds = [s for s, _ in compiled]
    return {"seconds": statistics.median(seconds), "graphs": statistics.median(g for _, g in compiled),
            "processes": float(len(compiled)), "spread_s": max(seconds) - min(seconds)}
