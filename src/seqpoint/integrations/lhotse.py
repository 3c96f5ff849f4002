"""lhotse samplers replayed as an IterationSchedule (lhotse is imported only when called): a
copy of the user's real sampler iterated over the cuts' metadata (no audio is read), each
mini-batch mapped to what the acoustic model sees: cuts → ``batch_size``, most frames →
``seq_len``, every cut's frames → ``rows``, Σ frames² → ``sum_sq_len``, targets → ``tgt_len``."""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from seqpoint._params import Interval, Options, Predicate, check_params
from seqpoint.exceptions import AssumedInputWarning, InputError
from seqpoint.integrations._recorder import row_lengths, schedule_of
from seqpoint.integrations._shapes import BatchShape
from seqpoint.schedule import IterationSchedule

if TYPE_CHECKING:
    from lhotse.cut import Cut
    from lhotse.dataset.sampling.base import CutSampler

__all__ = ["schedule_from_sampler"]

_WAY_OUT = ("give every cut a duration (e.g. CutSet.from_manifests with recordings), or record a real "
            "run with seqpoint.integrations.record and read the trace")


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


#: How a cut's samples become frames of ``frame_shift``: lhotse's ``compute_num_frames`` rounds.
_ROUNDINGS = ("round", "ceil", "floor")


def _frames(cut: Cut, frame_shift: float, sampling_rate: int | None, rounding: str) -> int:
    rate = getattr(cut, "sampling_rate", sampling_rate)
    if rate is None:
        raise InputError(f"lhotse cut {cut.id!r} has no recording or features, so it has no sampling rate; "
                         "pass sampling_rate=HZ to schedule_from_sampler.")
    samples, hop = round(cut.duration * rate), round(frame_shift * rate)
    return {"round": (samples + hop // 2) // hop, "ceil": -(-samples // hop), "floor": samples // hop}[rounding]


#: One replayed mini-batch: its epoch, every cut's frames, and every target's length (or None).
_Batch = tuple[int, list[int], list[int] | None]


def _replay(sampler: CutSampler, first_epoch: int, epochs: int, frames: Callable[[Cut], int],
            target_fn: Callable[[Cut], int] | None) -> list[_Batch]:
    rows: list[_Batch] = []
    texts = False  # whether some cut has a transcript that no target was counted for
    for e in range(epochs):
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(first_epoch + e)
        for batch in sampler:
            # A pair sampler (CutPairsSampler) yields (source cuts, target cuts).
            cuts = batch[0] if isinstance(batch, tuple) else batch
            if not hasattr(cuts, "__iter__") or isinstance(cuts, (str, bytes)):
                raise InputError(f"The sampler yielded {type(batch).__name__}, not a CutSet; "
                                 "schedule_from_sampler replays lhotse cut samplers.")
            cuts = list(cuts)
            for cut in cuts:
                _check_duration(cut)
            targets = None
            if target_fn is not None:
                targets = [int(target_fn(c)) for c in cuts]
            elif isinstance(batch, tuple) and len(batch) > 1:
                targets = [frames(c) for c in batch[1]]
            else:
                texts = texts or any(getattr(sup, "text", None) for c in cuts for sup in getattr(c, "supervisions", ()))
            if cuts:
                rows.append((e, [frames(c) for c in cuts], targets))
    if texts:
        warnings.warn(
            "schedule_from_sampler: the cuts carry transcripts, but without target_fn every target counts "
            "as 0 tokens (tgt_len 0, tgt_lengths 0); pass target_fn=lambda cut: <tokens of its transcript> "
            "for a model whose loss reads them (CTC, attention decoder, transducer).",
            AssumedInputWarning, stacklevel=3)
    return rows


def schedule_from_sampler(sampler: CutSampler, epochs: int = 1, frame_shift: float = 0.01, *,
                          sampling_rate: int | None = None, rounding: str = "round",
                          target_fn: Callable[[Cut], int] | None = None) -> IterationSchedule:
    """Replay a real lhotse sampler as an :class:`~seqpoint.schedule.IterationSchedule`, one row per mini-batch of this
    rank; InputError when a cut has no duration, or the sampler yields something other than cuts.

    ``sampler`` is any sampler yielding ``CutSet`` batches, with its own world size, rank, seed, shuffle and drop_last
    (it is copied first, the user's untouched), replayed for ``epochs`` from its current epoch (``set_epoch`` before
    each). ``frame_shift`` is the feature frame shift in seconds (``sampling_rate``: for cuts that carry none);
    ``rounding`` how samples become frames: ``round`` as lhotse's ``compute_num_frames``, ``ceil`` or ``floor`` for
    features that count so (a recorded run one frame off says which). ``target_fn`` (``cut -> int``) gives the tokens of
    a cut's transcript; without it a pair sampler's targets are its target cuts' frames, and others count 0 (an
    ``AssumedInputWarning`` says so when the cuts carry transcripts).
    """
    check_params("schedule_from_sampler",
                 {"epochs": [Interval(int, 1)], "frame_shift": [Interval(float, 0, closed="neither")],
                  "sampling_rate": [Interval(int, 1), None], "rounding": [Options(_ROUNDINGS)],
                  "target_fn": [Predicate(callable, "a callable cut -> int"), None]},
                 {"epochs": epochs, "frame_shift": frame_shift, "sampling_rate": sampling_rate,
                  "rounding": rounding, "target_fn": target_fn})
    try:
        replay = copy.deepcopy(sampler)
    except TypeError:  # a CutSet over a one-shot generator cannot be copied
        replay = sampler
    first_epoch = int(getattr(replay, "epoch", 0))
    try:
        rows = _replay(replay, first_epoch, epochs,
                       lambda cut: _frames(cut, frame_shift, sampling_rate, rounding), target_fn)
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
    meta = {"source": "lhotse", "sampler": type(sampler).__name__, "frame_shift": frame_shift, "rounding": rounding,
            "first_epoch": first_epoch, "epochs": epochs, "world_size": int(getattr(sampler, "world_size", 1)),
            "rank": int(getattr(sampler, "rank", 0))}
    shapes = [BatchShape(len(f), max(f), max(t or [0]), sum(f) + sum(t or []), sum(n * n for n in f))
              for _, f, t in rows]
    return schedule_of([e for e, _, _ in rows], shapes, meta, row_lengths([(f, t) for _, f, t in rows]))
