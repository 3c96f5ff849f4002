"""Process start-up of a workload: what it has run in this process, the warm-up that
absorbs one-time costs before the first measured point, and oneDNN's primitive counts.

A real run pays one-time costs (thread pools, library initialisation, optimizer state,
allocator growth) once per process, and a per-shape cost (kernel and primitive
selection) once per unique signature. The harness keeps both apart from a point's
steady state: the state of each workload object (:class:`StartupState`) is stored on
that object, so a second workload or a second campaign never sees another's.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence

from seqpoint.measurements._metrics import shapes_held
from seqpoint.profiling._failures import cleanup_after_failure
from seqpoint.profiling._state import state_of
from seqpoint.profiling._stdio import fd_redirected
from seqpoint.profiling._timers import workload_device
from seqpoint.workloads import Signature, Workload

__all__ = [
    "DEFAULT_BLOCK",
    "ONEDNN_DEFAULT_CACHE_CAPACITY",
    "STARTUP_STEPS",
    "StartupState",
    "campaign_decoy",
    "count_onednn_primitives",
    "interleave_block",
    "mark_seen",
    "onednn_cache_capacity",
    "startup_state",
]

#: oneDNN's primitive cache holds this many entries unless the environment says otherwise.
ONEDNN_DEFAULT_CACHE_CAPACITY = 1024

#: Steps of the start-up shape before the first measured point.
_STARTUP_STEPS = 3

#: Steps a fresh process runs before its first measured point, at most: the start-up
#: steps and one step of the oneDNN probe shape (what the reduction factor counts).
STARTUP_STEPS = _STARTUP_STEPS + 1


@dataclasses.dataclass(eq=False)
class StartupState:
    """What one workload object has run in this process (see :func:`startup_state`)."""

    seen: set[Signature] = dataclasses.field(default_factory=set)
    """Signatures stepped in this process: their first step is no longer cold."""
    primitives: tuple[int, int] | None = None
    """oneDNN primitives one step of a new shape creates and those it reuses (None: not
    counted: not on a CPU, no oneDNN, or start-up did not run)."""


def startup_state(
    workload: Workload,
    decoy: Sequence[int] | None = None,
    points: Iterable[Sequence[int]] = (),
) -> StartupState | None:
    """The start-up state of ``workload``, running the process start-up the first time.

    The first time a workload object is seen in a process, a few steps of a decoy shape
    absorb the process-level start-up, which is not a cost of any signature, and one
    step of a second shape counts oneDNN's primitives (:func:`count_onednn_primitives`).

    Parameters
    ----------
    workload : Workload
    decoy : tuple of int, optional
        The start-up shape (default: the workload's ``warmup_signature``; none: no
        start-up steps).
    points : iterable of tuple of int
        Shapes the start-up must leave cold (the campaign's points).

    Returns
    -------
    StartupState or None
        None for a workload that cannot be weakly referenced (seqpoint keeps the state
        beside the object, :func:`~seqpoint.profiling._state.state_of`): its first steps
        are then not told apart.
    """
    kept = state_of(workload)
    if kept is None:
        return None
    if kept.startup is None:
        kept.startup = StartupState()
        _run_startup(workload, kept.startup, decoy, points)
    state: StartupState = kept.startup
    return state


def mark_seen(workload: Workload, signatures: Iterable[Sequence[int]]) -> None:
    """Record that ``workload`` already ran ``signatures`` in this process."""
    state = startup_state(workload)
    if state is not None:
        state.seen.update(tuple(int(v) for v in s) for s in signatures)


def _run_startup(
    workload: Workload,
    state: StartupState,
    decoy: Sequence[int] | None,
    points: Iterable[Sequence[int]],
) -> None:
    if decoy is None:
        decoy = getattr(workload, "warmup_signature", None)
    if decoy is None:
        return
    start = tuple(int(v) for v in decoy)
    try:
        batch = workload.make_batch(start)
        for _ in range(_STARTUP_STEPS):
            workload.step(batch)
        probe = _probe_signature(start, {tuple(p[:3]) for p in points})
        if probe is not None:
            state.primitives = count_onednn_primitives(workload, probe)
    except Exception:  # a decoy that fails (OOM) leaves the points to report it
        cleanup_after_failure(workload)


def campaign_decoy(signatures: Sequence[Sequence[int]]) -> Signature | None:
    """The start-up shape of a campaign: just below its largest point, and none of them.

    A real run grows its allocator and thread pools once, to the size of its largest
    batches, long before it has met most of its shapes; a decoy as large as the
    campaign's largest point (one token shorter, so that point stays cold) makes the
    first step of every point pay only what belongs to its shape. A small decoy left
    that growth to the first points, whose cold steps then cost up to 1.9x their steady
    state on ``bert:tiny`` against 1.04x after a large decoy.

    Parameters
    ----------
    signatures : sequence of tuple of int
        The campaign's points, ``(batch_size, seq_len, tgt_len[, sum_sq_len])``.

    Returns
    -------
    tuple of int or None
        ``(batch_size, seq_len - 1, tgt_len)`` of the point with the most padded
        tokens (``seq_len + 1`` when that is taken or below 1); None for no points.
    """
    sigs = [tuple(int(v) for v in s) for s in signatures]
    if not sigs:
        return None
    taken = {s[:3] for s in sigs}
    b, length, *rest = max(sigs, key=lambda s: s[0] * (s[1] + (s[2] if len(s) > 2 else 0)))
    tgt = rest[0] if rest else 0
    for cand in (length - 1, length + 1, length - 2, length + 2):
        if cand >= 1 and (b, cand, tgt) not in taken:
            return (b, cand, tgt)
    return None


def _probe_signature(decoy: Signature, taken: set[Signature]) -> Signature | None:
    """A second start-up shape, every length about 20% below ``decoy``'s, never a point.

    Far enough that every layer's shape changes (two tokens less left strided
    convolutions' outputs unchanged: 9 new DeepSpeech2 primitives instead of 16).
    """
    b, length, *rest = decoy
    tgt = rest[0] if rest else 0
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
    return ONEDNN_DEFAULT_CACHE_CAPACITY


#: Points interleaved together when oneDNN's primitive counts are unknown.
DEFAULT_BLOCK = 16


def interleave_block(primitives: tuple[int, int] | None, capacity: int | None) -> int:
    """How many points one round-robin block holds: as many shapes as oneDNN's LRU
    primitive cache keeps at once (``(capacity - shared) // per_shape``, the rule of
    :func:`seqpoint.projection.cold_steps`), at least 1; :data:`DEFAULT_BLOCK` when the
    counts are unknown, unlimited when nothing is cached per shape."""
    if primitives is None or not capacity:
        return DEFAULT_BLOCK
    per_shape, shared = primitives
    if per_shape <= 0:
        return 1 << 30
    return max(1, shapes_held(per_shape, shared, capacity))


def count_onednn_primitives(workload: Workload, signature: Signature) -> tuple[int, int] | None:
    """oneDNN primitives one step of a never-seen shape creates, and those it reuses.

    oneDNN (convolutions, LSTMs, reorders on CPU) compiles a primitive per shape and
    keeps it in a per-process LRU cache (:func:`onednn_cache_capacity` entries). A run
    whose shapes need more entries than that re-creates primitives for shapes it has
    already met. The count comes from oneDNN's own verbose log of one untimed step
    (``create:cache_miss`` lines: new for this shape; ``create:cache_hit``: shared by
    every shape), captured from file descriptor 1. None off the CPU or without oneDNN.
    """
    import tempfile

    import torch

    if workload_device(workload).type != "cpu" or not torch.backends.mkldnn.is_available():
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
