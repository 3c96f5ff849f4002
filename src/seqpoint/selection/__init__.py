"""Stage 4: choose SeqPoints (and baselines) from a schedule."""

from seqpoint.selection._seqpoints import SeqPoint, SeqPoints, read_seqpoints, write_seqpoints

__all__ = ["SeqPoint", "SeqPoints", "read_seqpoints", "write_seqpoints"]
