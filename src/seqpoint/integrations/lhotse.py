"""lhotse samplers replayed as an IterationSchedule (lhotse is imported only when called).

:func:`schedule_from_sampler` iterates a copy of the user's real sampler over the cuts'
metadata (no audio is read) and maps each mini-batch to what the acoustic model sees:
cuts → ``batch_size``, most frames → ``seq_len``, all frames → ``tokens``, Σ frames² →
``sum_sq_len``, frames by lhotse's ``compute_num_frames``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from seqpoint._params import Interval, check_params
from seqpoint.exceptions import InputError
from seqpoint.schedule import IterationSchedule

if TYPE_CHECKING:
    from lhotse.cut import Cut
    from lhotse.dataset.sampling.base import CutSampler

__all__ = ["schedule_from_sampler"]

_WAY_OUT = (
    "give every cut a duration (e.g. CutSet.from_manifests with recordings), or record a real "
    "run with seqpoint.integrations.record and read the trace"
)


def _source_cuts(sampler: object) -> Iterator[Cut]:
    """Every cut the sampler draws from, read as metadata (lazy CutSets stream)."""
    sources: Iterable[Iterable[Cut]]
    if hasattr(sampler, "cuts"):  # DynamicBucketingSampler, BucketingSampler keep a tuple
        sources = sampler.cuts
    elif hasattr(sampler, "data_source"):  # SimpleCutSampler, CutPairsSampler
        sources = [sampler.data_source]
    else:
        return iter(())
    if not isinstance(sources, (tuple, list)):
        sources = [sources]
    return (cut for source in sources for cut in source)


def _check_duration(cut: Cut) -> None:
    duration = getattr(cut, "duration", None)
    if duration is None or not math.isfinite(duration) or duration <= 0:
        raise InputError(f"lhotse cut {getattr(cut, 'id', '?')!r} has no positive duration "
                         f"(got {duration!r}), so its frames cannot be counted; {_WAY_OUT}.")


def _frames(cut: Cut, frame_shift: float, sampling_rate: int | None) -> int:
    from lhotse.utils import compute_num_frames

    try:
        rate = cut.sampling_rate
    except AttributeError:
        rate = sampling_rate
    if rate is None:
        raise InputError(
            f"lhotse cut {cut.id!r} has no recording or features, so it has no sampling rate; "
            "pass sampling_rate=HZ to schedule_from_sampler."
        )
    return int(compute_num_frames(cut.duration, frame_shift, rate))


def _replay(sampler: CutSampler, first_epoch: int, epochs: int, frame_shift: float,
            sampling_rate: int | None) -> list[tuple[int, int, int, int, int]]:
    rows: list[tuple[int, int, int, int, int]] = []
    for e in range(epochs):
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(first_epoch + e)
        for batch in sampler:
            # Samplers over several CutSets (e.g. CutPairsSampler) yield a tuple; the
            # first holds the inputs.
            cuts = batch[0] if isinstance(batch, tuple) else batch
            if not hasattr(cuts, "__iter__") or isinstance(cuts, (str, bytes)):
                raise InputError(f"The sampler yielded {type(batch).__name__}, not a CutSet; "
                                 "schedule_from_sampler replays lhotse cut samplers.")
            for cut in cuts:
                _check_duration(cut)
            frames = np.array([_frames(c, frame_shift, sampling_rate) for c in cuts], dtype=np.int64)
            if frames.size:
                rows.append((e, frames.size, int(frames.max()), int(frames.sum()),
                             int((frames * frames).sum())))
    return rows


def schedule_from_sampler(sampler: CutSampler, epochs: int = 1, frame_shift: float = 0.01, *,
                          sampling_rate: int | None = None) -> IterationSchedule:
    """Replay a real lhotse sampler as an :class:`~seqpoint.schedule.IterationSchedule`.

    Parameters
    ----------
    sampler : lhotse.dataset.sampling.base.CutSampler
        Any lhotse sampler yielding ``CutSet`` batches (``DynamicBucketingSampler``,
        ``SimpleCutSampler`` ...), with its own world size, rank, seed, shuffle and
        drop_last. It is copied first; the user's sampler is untouched.
    epochs : int, default 1
        Epochs to replay from the sampler's current epoch (``set_epoch`` before each).
    frame_shift : float, default 0.01
        Feature frame shift in seconds.
    sampling_rate : int, optional
        Sampling rate for cuts that carry none.

    Returns
    -------
    IterationSchedule
        One row per mini-batch of this rank; ``tgt_len`` is 0.

    Raises
    ------
    InputError
        When a cut has no duration, or the sampler yields something other than cuts.
    """
    check_params(
        "schedule_from_sampler",
        {"epochs": [Interval(int, 1)], "frame_shift": [Interval(float, 0, closed="neither")],
         "sampling_rate": [Interval(int, 1), None]},
        {"epochs": epochs, "frame_shift": frame_shift, "sampling_rate": sampling_rate},
    )
    try:
        replay = copy.deepcopy(sampler)
    except TypeError:  # a CutSet over a one-shot generator cannot be copied
        replay = sampler
    first_epoch = int(getattr(replay, "epoch", 0))
    try:
        rows = _replay(replay, first_epoch, epochs, frame_shift, sampling_rate)
    except TypeError:
        # lhotse compares or adds durations while bucketing; None durations fail there
        # with a bare TypeError, so name the cut instead.
        for cut in _source_cuts(sampler):
            _check_duration(cut)
        raise
    finally:
        if replay is sampler and hasattr(sampler, "set_epoch"):
            sampler.set_epoch(first_epoch)
    if not rows:
        raise InputError("The lhotse sampler yielded no batch; check max_duration/max_cuts and drop_last.")
    data = np.array(rows, dtype=np.int64)
    meta = {"source": "lhotse", "sampler": type(sampler).__name__, "frame_shift": frame_shift,
            "first_epoch": first_epoch, "epochs": epochs, "world_size": int(getattr(sampler, "world_size", 1)),
            "rank": int(getattr(sampler, "rank", 0))}
    return IterationSchedule.from_columns(
        {"epoch": data[:, 0], "batch_size": data[:, 1], "seq_len": data[:, 2],
         "tokens": data[:, 3], "sum_sq_len": data[:, 4]},
        meta=meta,
    )
