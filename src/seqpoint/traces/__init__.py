"""Stage 1: per-sample sequence lengths (tokens or 10 ms frames, plus target lengths for
encoder-decoder data) from files, arrays and bundled real data sets; no audio, no tensors."""

from seqpoint.traces._dispatch import FORMATS, read_lengths
from seqpoint.traces._files import decompress as decompress  # not in __all__: the tests' zip bomb
from seqpoint.traces._lengths import MAX_LENGTH, Lengths, from_array
from seqpoint.traces._text import count_whitespace_tokens

__all__ = ["FORMATS", "MAX_LENGTH", "Lengths", "count_whitespace_tokens", "from_array", "read_lengths"]
