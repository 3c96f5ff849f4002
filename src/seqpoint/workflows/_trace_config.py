"""What ``seqpoint validate CONFIG --trace T`` reads of a run config, and the refusal of
what it would ignore (:func:`check_trace_config`).

With a recorded run as the truth, the trace's micro-batches are the run's schedule and
its step times the truth: ``[lengths]``, ``[batching]`` (but ``world_size`` and ``rank``,
which pick one rank of a data-parallel trace) and ``[validation]`` (full runs, baselines) describe what
the trace replaces. A value set there would be silently ignored, so a user who reuses the
config of ``seqpoint run`` could believe the trace was checked against it: every such
key is named, in one line, with what to keep. A section left at its defaults (or not in
the file) passes.
"""

from __future__ import annotations

import dataclasses

from seqpoint.exceptions import ConfigError
from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._sections import (
    BatchingSection,
    LengthsSection,
    ProjectionSection,
    ValidationSection,
)

__all__ = ["check_trace_config"]

#: Sections whose keys ``validate --trace`` does not read, with their defaults, and the
#: keys of them that it does read.
_NOT_READ: tuple[tuple[str, object, frozenset[str]], ...] = (
    ("lengths", LengthsSection(), frozenset()),
    ("batching", BatchingSection(), frozenset({"world_size", "rank"})),
    ("projection", ProjectionSection(), frozenset({"method", "confidence"})),
    ("validation", ValidationSection(), frozenset()),
)


def _ignored(cfg: RunConfig) -> list[str]:
    """``[section] key, key`` for each section with keys set that --trace would not read."""
    out = []
    for section, default, read in _NOT_READ:
        current = getattr(cfg, section)
        keys = [f.name for f in dataclasses.fields(current)
                if f.name not in read and getattr(current, f.name) != getattr(default, f.name)]
        if keys:
            out.append(f"[{section}] {', '.join(keys)}")
    return out


def check_trace_config(cfg: RunConfig) -> None:
    """Refuse a config that sets what ``validate --trace`` would ignore.

    Raises
    ------
    ConfigError
        One line naming every such section and key, and what to do.
    """
    ignored = _ignored(cfg)
    if not ignored:
        return
    raise ConfigError(
        f"validate --trace does not read {'; '.join(ignored)}: the trace's micro-batches are the run and "
        "the recorded runs the truth. Remove these from the config (--trace reads [selection], [workload], "
        "[profile], [report] out and [batching] world_size and rank, which pick one rank of a data-parallel "
        "trace), or "
        "leave out --trace to validate by full runs."
    )
