"""Stage 1: per-sample sequence lengths from files, arrays and bundled real data sets.

Nothing here loads audio or builds tensors: a length source is one integer per sample
(tokens or 10 ms frames), plus a target length for encoder-decoder data.
"""

from seqpoint.traces._bundled import BUNDLED, BundledDataset, bundled_lengths
from seqpoint.traces._columns import COUNT_COLUMNS, LENGTH_COLUMNS
from seqpoint.traces._csv import read_csv_lengths, read_numpy_lengths
from seqpoint.traces._dispatch import FORMATS, infer_format, read_lengths
from seqpoint.traces._files import MAX_FILE_BYTES
from seqpoint.traces._histogram import MAX_HISTOGRAM_SAMPLES, read_histogram
from seqpoint.traces._jsonl import read_jsonl_lengths
from seqpoint.traces._lengths import MAX_LENGTH, Lengths, check_lengths, from_array
from seqpoint.traces._text import (
    count_whitespace_tokens,
    read_parallel_lengths,
    read_text_lengths,
)

__all__ = [
    "BUNDLED",
    "COUNT_COLUMNS",
    "FORMATS",
    "LENGTH_COLUMNS",
    "MAX_FILE_BYTES",
    "MAX_HISTOGRAM_SAMPLES",
    "MAX_LENGTH",
    "BundledDataset",
    "Lengths",
    "bundled_lengths",
    "check_lengths",
    "count_whitespace_tokens",
    "from_array",
    "infer_format",
    "read_csv_lengths",
    "read_histogram",
    "read_jsonl_lengths",
    "read_lengths",
    "read_numpy_lengths",
    "read_parallel_lengths",
    "read_text_lengths",
]
