"""A point's real batch shape and the lengths part of its cache key: the one definition
that the serial campaign and every executor's driver and workers share
(:func:`point_shape`, :func:`lengths_key`)."""

from __future__ import annotations

from typing import Any

from seqpoint.workloads import BatchShape, takes_batch_shape

__all__ = ["lengths_key", "point_shape"]


def point_shape(point: Any, *, takes_shape: bool | Any, name: str = "workload") -> BatchShape | None:
    """The :class:`~seqpoint.workloads.BatchShape` a workload is given for ``point``.

    Parameters
    ----------
    point : SeqPoint-like
        Anything with ``signature`` and optionally ``lengths``, ``tgt_lengths`` and
        ``row_of`` (the packed row of each sequence) attributes.
    takes_shape : bool or Workload
        Whether the workload takes a BatchShape (a workload object is asked with
        :func:`~seqpoint.workloads.takes_batch_shape`).
    name : str
        The workload's name, for error messages.

    Returns
    -------
    BatchShape or None
        None when the workload takes signatures only or the point records no lengths:
        the workload then gets the bare signature (full-length rows).
    """
    wants = takes_shape if isinstance(takes_shape, bool) else takes_batch_shape(takes_shape)
    lengths = getattr(point, "lengths", None)
    if not wants or lengths is None:
        return None
    return BatchShape.of(
        point.signature, lengths, getattr(point, "tgt_lengths", None),
        row_of=getattr(point, "row_of", None), workload=name,
    )


def lengths_key(shape: BatchShape | None) -> str | None:
    """The ``lengths=`` part of a measurement's cache key (None: a signature-only key)."""
    return None if shape is None else shape.digest()
